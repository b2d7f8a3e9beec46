#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/gallery/gallery_location.h"
#include "engine/gallery/gallery_store.h"

namespace kvs::cli {
namespace {

const char* kHelp =
    R"(usage: kvstudio-cli gallery list [--search TEXT] [--model NAME] [--policy NAME] [--limit N] [--json]
       kvstudio-cli gallery remove ID [--delete-file]
       kvstudio-cli gallery export ID[,ID...] --to DIR
       kvstudio-cli gallery path

  The gallery keeps every image `generate` writes (unless --no-gallery, or KVSTUDIO_GALLERY=off)
  and every image the window makes: prompt or class, seed, model, policy, sampling settings,
  speed and KV figures, date, and where the PNG is. It lives in $KVSTUDIO_GALLERY_DIR, else
  $XDG_DATA_HOME/kvstudio/gallery, else ~/.local/share/kvstudio/gallery (gallery.sqlite).

  list      newest first: id, date, model, policy, seed, the prompt or class, the PNG
  --search TEXT     only images whose prompt, class, model or policy contains TEXT (any case)
  --model NAME      only images of this model (its name, as `list` shows it)
  --policy NAME     only images whose policy starts with NAME (linear, linear:rho=1/4, ...)
  --limit N         at most N images (default 50; 0: all)
  --json            every field as JSON, the request that makes the image included
  remove    forget image ID; --delete-file deletes its PNG too
  export    copy the PNGs of the ids given into DIR (created when missing), keeping their
            names (NAME_2.png where a name is taken); prints the files written
  path      print where the gallery's database is
)";

// "12" -> 12; anything but a whole positive number is refused by name.
int64_t parse_gallery_id(const std::string& text) {
  int64_t id = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (text.empty() || ec != std::errc() || ptr != end || id < 1)
    throw InvalidArgumentError("gallery id '" + text +
                               "' is not an image id (a whole number, as `gallery list` shows)");
  return id;
}

std::vector<int64_t> parse_gallery_ids(const std::string& text) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    ids.push_back(parse_gallery_id(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

// One line: a prompt's first line (shortened), or the class.
std::string subject(const GalleryEntry& e) {
  if (e.class_id >= 0) {
    const std::string number = "class " + std::to_string(e.class_id);
    return e.class_name == number || e.class_name.empty() ? number : e.class_name + " (" + number + ")";
  }
  std::string line = e.prompt.substr(0, e.prompt.find('\n'));
  if (line.size() > 48) line = line.substr(0, 45) + "...";
  return "\"" + line + "\"";
}

int gallery_list(const std::vector<std::string>& args) {
  ArgParser p(args, {"--search", "--model", "--policy", "--limit"}, {"--json"}, 0);
  GalleryQuery query;
  query.text = p.get("--search", "");
  if (p.has("--model")) query.model = p.get("--model", "");
  if (p.has("--policy")) query.policy = p.get("--policy", "");
  query.limit = p.get_int("--limit", 50);
  if (query.limit < 0) throw InvalidArgumentError("option --limit must be >= 0 (0: all)");
  const GalleryStore store = GalleryStore::open(gallery_database_path(default_gallery_dir()));
  const std::vector<GalleryEntry> entries = store.search(query);
  if (p.flag("--json")) {
    nlohmann::json list = nlohmann::json::array();
    for (const GalleryEntry& e : entries) list.push_back(to_json(e));
    std::printf("%s\n", list.dump(2).c_str());
    return 0;
  }
  for (const GalleryEntry& e : entries)
    std::printf("%6lld  %s  %-16s %-22s seed %-10llu %s  %s\n", static_cast<long long>(e.id), e.created.c_str(),
                e.model_name.c_str(), e.policy.c_str(), static_cast<unsigned long long>(e.seed), subject(e).c_str(),
                e.png_path.c_str());
  // Said when the limit cut the list, on stderr so that the lines stay one per image.
  GalleryQuery more = query;
  more.offset = query.limit;
  more.limit = 1;
  if (query.limit > 0 && static_cast<int64_t>(entries.size()) == query.limit && !store.search(more).empty())
    std::fprintf(stderr, "(the newest %lld shown; --limit 0 shows all)\n", static_cast<long long>(query.limit));
  return 0;
}

int gallery_remove(const std::vector<std::string>& args) {
  ArgParser p(args, {}, {"--delete-file"}, 1);
  if (p.positional().empty()) throw InvalidArgumentError("gallery remove needs an image id (see `gallery list`)");
  const int64_t id = parse_gallery_id(p.positional()[0]);
  GalleryStore store = GalleryStore::open(gallery_database_path(default_gallery_dir()));
  const std::optional<GalleryEntry> entry = store.get(id);
  if (!entry || !store.remove(id, p.flag("--delete-file")))
    throw InvalidArgumentError("no image " + std::to_string(id) + " in the gallery " + store.path());
  std::printf("removed %lld%s\n", static_cast<long long>(id),
              p.flag("--delete-file") ? (" and deleted " + entry->png_path).c_str() : "");
  return 0;
}

int gallery_export(const std::vector<std::string>& args) {
  ArgParser p(args, {"--to"}, {}, 1);
  if (p.positional().empty()) throw InvalidArgumentError("gallery export needs image ids (ID[,ID...])");
  const std::vector<int64_t> ids = parse_gallery_ids(p.positional()[0]);
  const std::string folder = p.require("--to");
  const GalleryStore store = GalleryStore::open(gallery_database_path(default_gallery_dir()));
  for (const std::string& written : store.export_to(ids, folder)) std::printf("%s\n", written.c_str());
  return 0;
}

}  // namespace

int cmd_gallery(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kHelp, stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& a : rest)
    if (a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    }
  if (sub == "list") return gallery_list(rest);
  if (sub == "remove") return gallery_remove(rest);
  if (sub == "export") return gallery_export(rest);
  if (sub == "path") {
    ArgParser p(rest, {}, {}, 0);
    std::printf("%s\n", gallery_database_path(default_gallery_dir()).c_str());
    return 0;
  }
  throw InvalidArgumentError("unknown gallery command '" + sub + "' (list, remove, export or path; see --help)");
}

}  // namespace kvs::cli
