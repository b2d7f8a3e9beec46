// The per-user gallery (engine/gallery): entries stored, searched, recalled,
// removed and exported; files that are not galleries refused with a FormatError
// naming them; and the promise it exists for: a writer killed at any moment
// leaves a database that opens, passes SQLite's integrity check and holds only
// complete rows (GalleryKill, over the gallery_writer program).
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "engine/core/errors.h"
#include "engine/gallery/gallery_entry.h"
#include "engine/gallery/gallery_location.h"
#include "engine/gallery/gallery_store.h"
#include "tests/engine/gallery_writer_entry.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using kvs::test::TempDir;
namespace fs = std::filesystem;

namespace {

GalleryEntry entry(const std::string& prompt, const std::string& model, const std::string& policy, uint64_t seed,
                   const std::string& created = "") {
  GalleryEntry e;
  e.created = created;
  e.png_path = "/images/" + std::to_string(seed) + ".png";
  e.model_name = model;
  e.model_dir = "/models/" + model;
  e.family = "janus-pro";
  e.prompt = prompt;
  e.seed = seed;
  e.policy = policy;
  e.cfg_scale = 5;
  e.width = e.height = 64;
  e.request_json = "{\"seed\":" + std::to_string(seed) + "}";
  e.source = "test";
  return e;
}

std::vector<uint64_t> seeds_of(const std::vector<GalleryEntry>& entries) {
  std::vector<uint64_t> seeds;
  for (const GalleryEntry& e : entries) seeds.push_back(e.seed);
  return seeds;
}

// The message of the FormatError `f` throws; a failure when it throws another
// error or none.
std::string format_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a FormatError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a FormatError, got none";
  return "";
}

void sql(const std::string& db_path, const std::string& statements) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  kvs::test::write_bytes(path.string(), bytes);
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  return bytes;
}

}  // namespace

TEST(GalleryStore, AddGetCountAndRemove) {
  TempDir dir;
  // The folder is created with the file.
  GalleryStore store = GalleryStore::open((dir.path() / "a" / "b" / "gallery.sqlite").string());
  EXPECT_EQ(store.count(), 0);
  GalleryEntry e = entry("a lake at night\nwith a full moon", "janus-pro-demo", "linear:rho=1/4",
                         18446744073709551615u);
  e.negative_prompt = "blur";
  e.temperature = 0.9;
  e.top_k = 40;
  e.top_p = 0.95;
  e.steps = 12;
  e.tokens_per_second = 123.5;
  e.elapsed_ms = 987.25;
  e.kv_bytes_full = 1 << 20;
  e.kv_bytes_peak = 600000;
  e.kv_bytes_logical_final = 262144;
  e.batch_index = 1;
  const int64_t id = store.add(e);
  EXPECT_GT(id, 0);
  EXPECT_EQ(store.count(), 1);
  const std::optional<GalleryEntry> got = store.get(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->created.size(), 20u) << got->created;  // filled: YYYY-MM-DDTHH:MM:SSZ
  EXPECT_EQ(got->created.back(), 'Z');
  EXPECT_EQ(got->png_path, e.png_path);
  EXPECT_EQ(got->model_name, "janus-pro-demo");
  EXPECT_EQ(got->model_dir, e.model_dir);
  EXPECT_EQ(got->family, "janus-pro");
  EXPECT_EQ(got->prompt, e.prompt);
  EXPECT_EQ(got->negative_prompt, "blur");
  EXPECT_EQ(got->class_id, -1);
  EXPECT_EQ(got->seed, 18446744073709551615u);  // the whole 64-bit range comes back
  EXPECT_EQ(got->policy, "linear:rho=1/4");
  EXPECT_EQ(got->cfg_scale, 5);
  EXPECT_EQ(got->temperature, 0.9);
  EXPECT_EQ(got->top_k, 40);
  EXPECT_EQ(got->top_p, 0.95);
  EXPECT_EQ(got->steps, 12);
  EXPECT_EQ(got->width, 64);
  EXPECT_EQ(got->height, 64);
  EXPECT_EQ(got->tokens_per_second, 123.5);
  EXPECT_EQ(got->elapsed_ms, 987.25);
  EXPECT_EQ(got->kv_bytes_full, 1 << 20);
  EXPECT_EQ(got->kv_bytes_peak, 600000);
  EXPECT_EQ(got->kv_bytes_logical_final, 262144);
  EXPECT_EQ(got->batch_index, 1);
  EXPECT_EQ(got->request_json, e.request_json);
  EXPECT_EQ(got->source, "test");
  EXPECT_FALSE(store.get(id + 1));

  const int64_t second = store.add(entry("b", "m", "full", 2));
  EXPECT_EQ(second, id + 1);
  EXPECT_TRUE(store.remove(id, false));
  EXPECT_FALSE(store.remove(id, false));
  EXPECT_FALSE(store.get(id));
  EXPECT_EQ(store.count(), 1);
  // Ids are not reused after a removal: the window may still hold one.
  EXPECT_GT(store.add(entry("c", "m", "full", 3)), second);
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST(GalleryStore, SearchesPromptClassModelAndPolicyNewestFirst) {
  TempDir dir;
  GalleryStore store = GalleryStore::open(dir.file("gallery.sqlite"));
  store.add(entry("A Lake at night", "janus-pro-demo", "linear:rho=1/4", 1, "2026-11-01T10:00:00Z"));
  store.add(entry("a desert at noon", "janus-pro-demo", "full", 2, "2026-11-03T10:00:00Z"));
  GalleryEntry cls = entry("", "llamagen-demo", "headkv:rho=1/6", 3, "2026-11-02T10:00:00Z");
  cls.class_id = 2;
  cls.class_name = "lake";
  store.add(cls);
  store.add(entry("forest", "var-demo", "linear:rho=1/8", 4, "2026-11-02T10:00:00Z"));

  EXPECT_EQ(seeds_of(store.search({})), (std::vector<uint64_t>{2, 4, 3, 1}));  // by date, then the later id
  GalleryQuery q;
  q.text = "LAKE";  // the prompt of 1, the class name of 3, any case
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{3, 1}));
  q.text = "var-";  // a model name
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{4}));
  q.text = "rho=1/";  // policies
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{4, 3, 1}));
  q = {};
  q.model = "JANUS-pro-demo";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{2, 1}));
  q.model = "janus";  // the whole name, not a part
  EXPECT_TRUE(store.search(q).empty());
  q = {};
  q.policy = "linear";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{4, 1}));
  q.policy = "linear:rho=1/4";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{1}));
  q.policy = "rho";  // a prefix, not anywhere
  EXPECT_TRUE(store.search(q).empty());
  q = {};
  q.text = "a";
  q.policy = "full";
  q.model = "janus-pro-demo";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{2}));
  q = {};
  q.limit = 2;
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{2, 4}));
  q.offset = 2;
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{3, 1}));
  q.offset = 4;
  EXPECT_TRUE(store.search(q).empty());
  q = {};
  q.limit = -1;
  EXPECT_NE(kvs::test::error_of([&] { store.search(q); }), "no error");
}

TEST(GalleryStore, SearchTakesWildcardsAndQuotesLiterally) {
  TempDir dir;
  GalleryStore store = GalleryStore::open(dir.file("gallery.sqlite"));
  store.add(entry("100% sure", "m", "full", 1));
  store.add(entry("1000 sure", "m", "full", 2));
  store.add(entry("snake_case", "m", "full", 3));
  store.add(entry("snakeXcase", "m", "full", 4));
  store.add(entry("back\\slash", "m", "full", 5));
  store.add(entry("it's \"quoted\"", "m", "full", 6));
  GalleryQuery q;
  q.text = "100%";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{1}));
  q.text = "%";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{1}));
  q.text = "e_c";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{3}));
  q.text = "_";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{3}));
  q.text = "k\\s";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{5}));
  q.text = "'s \"quo";
  EXPECT_EQ(seeds_of(store.search(q)), (std::vector<uint64_t>{6}));
  q = {};
  q.policy = "f_ll";
  EXPECT_TRUE(store.search(q).empty());
  q.policy = "%";
  EXPECT_TRUE(store.search(q).empty());
}

TEST(GalleryStore, ReopeningKeepsEntries) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  {
    GalleryStore store = GalleryStore::open(db);
    store.add(entry("one", "m", "full", 1));
    store.add(entry("two", "m", "full", 2));
  }
  GalleryStore store = GalleryStore::open(db);
  EXPECT_EQ(store.count(), 2);
  EXPECT_EQ(store.get(2)->prompt, "two");
  store.add(entry("three", "m", "full", 3));
  GalleryStore other = GalleryStore::open(db);  // a second connection sees the commit
  EXPECT_EQ(other.count(), 3);
  GalleryStore moved = std::move(other);
  EXPECT_EQ(moved.count(), 3);
  EXPECT_EQ(moved.path(), db);
}

TEST(GalleryStore, RandomBytesAreAFormatErrorNamingTheFile) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  write_file(db, random_bytes(8192, 1));
  const std::string message = format_error_of([&] { GalleryStore::open(db); });
  EXPECT_NE(message.find(db), std::string::npos) << message;
  EXPECT_NE(message.find("not a SQLite database"), std::string::npos) << message;
  // Refused before anything is written to it.
  EXPECT_EQ(kvs::test::read_bytes(db), random_bytes(8192, 1));
  // A short file of text too.
  write_file(db, "hello, this is not a database at all, but it is long enough to have a header........");
  EXPECT_NE(format_error_of([&] { GalleryStore::open(db); }).find(db), std::string::npos);
}

TEST(GalleryStore, DamagedPagesAreAFormatErrorNamingTheFile) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  {
    GalleryStore store = GalleryStore::open(db);
    for (int64_t n = 1; n <= 40; ++n) store.add(kvs::test::gallery_writer_entry(n));
  }
  // Page 1 (the header and the schema) intact, every other page garbage.
  std::string bytes = kvs::test::read_bytes(db);
  ASSERT_GT(bytes.size(), 4096u * 8);
  const std::string garbage = random_bytes(bytes.size() - 4096, 2);
  bytes.replace(4096, garbage.size(), garbage);
  write_file(db, bytes);
  const std::string message = format_error_of([&] {
    GalleryStore store = GalleryStore::open(db);
    store.search({});
    store.count();
    ADD_FAILURE() << "no error reading a damaged gallery; integrity check: " << store.integrity_check();
  });
  EXPECT_NE(message.find(db), std::string::npos) << message;
}

TEST(GalleryStore, NewerSchemaIsRefused) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  { GalleryStore::open(db).add(entry("one", "m", "full", 1)); }
  sql(db, "PRAGMA user_version=" + std::to_string(GalleryStore::kSchemaVersion + 6));
  const std::string message = format_error_of([&] { GalleryStore::open(db); });
  EXPECT_NE(message.find(db), std::string::npos) << message;
  EXPECT_NE(message.find("schema version " + std::to_string(GalleryStore::kSchemaVersion + 6)), std::string::npos)
      << message;
  EXPECT_NE(message.find("newer KV Studio"), std::string::npos) << message;
}

TEST(GalleryStore, AnotherProgramsDatabaseIsRefusedUntouched) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  sql(db, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
  const std::string before = kvs::test::read_bytes(db);
  EXPECT_NE(format_error_of([&] { GalleryStore::open(db); }).find("not a KV Studio gallery"), std::string::npos);
  EXPECT_EQ(kvs::test::read_bytes(db), before);
  const std::string other = dir.file("other.sqlite");
  sql(other, "PRAGMA application_id=1234");
  EXPECT_NE(format_error_of([&] { GalleryStore::open(other); }).find(other), std::string::npos);
}

TEST(GalleryStore, FoldersThatCannotBeMadeAreFileErrors) {
  TempDir dir;
  write_file(dir.path() / "a-file", "x");
  const std::string db = (dir.path() / "a-file" / "gallery" / "gallery.sqlite").string();
  try {
    GalleryStore::open(db);
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find((dir.path() / "a-file" / "gallery").string()), std::string::npos) << e.what();
  }
  fs::create_directories(dir.path() / "a-folder");
  EXPECT_NE(kvs::test::error_of([&] { GalleryStore::open((dir.path() / "a-folder").string()); }), "no error");
}

TEST(GalleryStore, ExportCopiesThePngsAndKeepsNamesApart) {
  TempDir dir;
  GalleryStore store = GalleryStore::open(dir.file("gallery.sqlite"));
  const fs::path a = dir.path() / "a" / "lake.png", b = dir.path() / "b" / "lake.png", c = dir.path() / "c" / "fox.png";
  write_file(a, "png a");
  write_file(b, "png b");
  write_file(c, "png c");
  GalleryEntry ea = entry("a", "m", "full", 1), eb = entry("b", "m", "full", 2), ec = entry("c", "m", "full", 3);
  ea.png_path = a.string();
  eb.png_path = b.string();
  ec.png_path = c.string();
  const int64_t ia = store.add(ea), ib = store.add(eb), ic = store.add(ec);

  const fs::path out = dir.path() / "out" / "deeper";
  const std::vector<std::string> written = store.export_to({ia, ib, ic, ia}, out.string());
  ASSERT_EQ(written, (std::vector<std::string>{(out / "lake.png").string(), (out / "lake_2.png").string(),
                                               (out / "fox.png").string()}));
  EXPECT_EQ(kvs::test::read_bytes(written[0]), "png a");
  EXPECT_EQ(kvs::test::read_bytes(written[1]), "png b");
  EXPECT_EQ(kvs::test::read_bytes(written[2]), "png c");
  // Again into the same folder: nothing is overwritten.
  EXPECT_EQ(store.export_to({ic}, out.string()), (std::vector<std::string>{(out / "fox_2.png").string()}));
  EXPECT_EQ(kvs::test::read_bytes((out / "fox.png").string()), "png c");

  // Gone PNGs are named, all of them, and nothing is copied.
  fs::remove(b);
  fs::remove(c);
  const fs::path out2 = dir.path() / "out2";
  try {
    store.export_to({ia, ib, ic}, out2.string());
    FAIL() << "no error";
  } catch (const FileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(b.string()), std::string::npos) << message;
    EXPECT_NE(message.find(c.string()), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(out2));
  // An unknown id.
  try {
    store.export_to({ia, 99}, out2.string());
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("no image 99 in the gallery"), std::string::npos) << e.what();
  }
  EXPECT_NE(kvs::test::error_of([&] { store.export_to({}, out2.string()); }), "no error");
}

TEST(GalleryStore, RemoveCanDeleteThePng) {
  TempDir dir;
  GalleryStore store = GalleryStore::open(dir.file("gallery.sqlite"));
  const fs::path png = dir.path() / "img.png";
  write_file(png, "png");
  GalleryEntry e = entry("a", "m", "full", 1);
  e.png_path = png.string();
  const int64_t kept = store.add(e), deleted = store.add(e);
  EXPECT_TRUE(store.remove(kept, false));
  EXPECT_TRUE(fs::exists(png));
  EXPECT_TRUE(store.remove(deleted, true));
  EXPECT_FALSE(fs::exists(png));
  // A PNG already gone is no reason to keep the row.
  const int64_t orphan = store.add(e);
  EXPECT_TRUE(store.remove(orphan, true));
  EXPECT_EQ(store.count(), 0);
}

TEST(GalleryEntry, FromAFinishedRun) {
  GenerationRequest request;
  request.model_path = "resources/models/llamagen-demo";
  request.class_ids = {3, 7};
  request.seed = 11;
  request.cfg_scale = 4.5;
  request.sampling.temperature = 0.8;
  request.sampling.top_k = 100;
  request.sampling.top_p = 0.9;
  request.policy = parse_policy_spec("linear:rho=1/4");
  GenerationResult result;
  result.model_name = "llamagen-demo";
  RgbImage image;
  image.width = 64;
  image.height = 48;
  result.images = {image, image};
  result.tokens = {{1}, {2}};
  result.tokens_per_second = 321;
  result.elapsed_ms = 45;
  result.kv_bytes_full = 4000;
  result.kv_bytes_peak = 3000;
  result.kv_bytes_logical_final = 1000;
  result.policy = "linear:rho=1/4";
  const std::vector<std::string> names = {"a", "b", "c", "underwater"};
  GalleryEntry e = gallery_entry(request, result, 0, names, "out/x.png", "cli");
  EXPECT_TRUE(fs::path(e.png_path).is_absolute()) << e.png_path;
  EXPECT_EQ(e.png_path, (fs::current_path() / "out" / "x.png").string());
  EXPECT_EQ(e.model_dir, (fs::current_path() / "resources/models/llamagen-demo").string());
  EXPECT_EQ(e.model_name, "llamagen-demo");
  EXPECT_EQ(e.class_id, 3);
  EXPECT_EQ(e.class_name, "underwater");
  EXPECT_TRUE(e.prompt.empty());
  EXPECT_EQ(e.seed, 11u);
  EXPECT_EQ(e.policy, "linear:rho=1/4");
  EXPECT_EQ(e.cfg_scale, 4.5);
  EXPECT_EQ(e.temperature, 0.8);
  EXPECT_EQ(e.top_k, 100);
  EXPECT_EQ(e.top_p, 0.9);
  EXPECT_EQ(e.width, 64);
  EXPECT_EQ(e.height, 48);
  EXPECT_EQ(e.tokens_per_second, 321);
  EXPECT_EQ(e.elapsed_ms, 45);
  EXPECT_EQ(e.kv_bytes_full, 4000);
  EXPECT_EQ(e.kv_bytes_peak, 3000);
  EXPECT_EQ(e.kv_bytes_logical_final, 1000);
  EXPECT_EQ(e.batch_index, 0);
  EXPECT_EQ(e.source, "cli");
  EXPECT_EQ(e.created.size(), 20u);
  const nlohmann::json request_json = nlohmann::json::parse(e.request_json);
  EXPECT_EQ(request_json.at("seed"), 11);
  EXPECT_EQ(request_json.at("class_ids"), nlohmann::json({3, 7}));
  const GenerationRequest recalled = gallery_recall_request(e);
  EXPECT_EQ(recalled.class_ids, (std::vector<int64_t>{3}));  // the one image's class
  EXPECT_EQ(recalled.seed, 11u);
  EXPECT_EQ(recalled.policy.text(), "linear:rho=1/4");
  EXPECT_EQ(recalled.sampling.top_k, 100);
  // A class the model does not name is "class N", as in the PNG's metadata.
  e = gallery_entry(request, result, 1, names, "/abs/y.png", "window");
  EXPECT_EQ(e.class_id, 7);
  EXPECT_EQ(e.class_name, "class 7");
  EXPECT_EQ(e.png_path, "/abs/y.png");
  EXPECT_EQ(e.batch_index, 1);
  EXPECT_NE(kvs::test::error_of([&] { gallery_entry(request, result, 2, names, "/abs/z.png", "cli"); }), "no error");

  GenerationRequest text;
  text.model_path = "/models/janus";
  text.prompt = "a red fox";
  text.negative_prompt = "blur";
  text.images = 1;
  result.images.resize(1);
  e = gallery_entry(text, result, 0, {}, "/abs/fox.png", "window");
  EXPECT_EQ(e.prompt, "a red fox");
  EXPECT_EQ(e.negative_prompt, "blur");
  EXPECT_EQ(e.class_id, -1);
  EXPECT_TRUE(e.class_name.empty());
  EXPECT_EQ(gallery_recall_request(e).prompt, "a red fox");
  EXPECT_EQ(gallery_recall_request(e).negative_prompt, "blur");
  EXPECT_EQ(gallery_recall_request(e).images, 1);
  GalleryEntry broken = e;
  broken.request_json = "{not json";
  EXPECT_NE(kvs::test::error_of([&] { gallery_recall_request(broken); }).find("not valid JSON"), std::string::npos);
  broken.request_json = "{\"seed\": \"eleven\"}";
  EXPECT_NE(kvs::test::error_of([&] { gallery_recall_request(broken); }).find("seed"), std::string::npos);
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("request").at("prompt"), "a red fox");  // nested, not a string
  EXPECT_EQ(j.at("png_path"), "/abs/fox.png");
}

TEST(GalleryLocation, FollowsTheEnvironment) {
  const auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const std::optional<std::string> dir = saved("KVSTUDIO_GALLERY_DIR"), xdg = saved("XDG_DATA_HOME"),
                                   home = saved("HOME");
  setenv("KVSTUDIO_GALLERY_DIR", "/g", 1);
  setenv("XDG_DATA_HOME", "/xdg", 1);
  setenv("HOME", "/home/me", 1);
  EXPECT_EQ(default_gallery_dir(), "/g");
  unsetenv("KVSTUDIO_GALLERY_DIR");
  EXPECT_EQ(default_gallery_dir(), "/xdg/kvstudio/gallery");
  setenv("XDG_DATA_HOME", "relative", 1);  // XDG: a relative path is ignored
  EXPECT_EQ(default_gallery_dir(), "/home/me/.local/share/kvstudio/gallery");
  unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(default_gallery_dir(), "/home/me/.local/share/kvstudio/gallery");
  EXPECT_EQ(gallery_database_path("/g"), "/g/gallery.sqlite");
  EXPECT_EQ(gallery_images_dir("/g"), "/g/images");
  for (const auto& [name, value] :
       {std::pair{"KVSTUDIO_GALLERY_DIR", dir}, std::pair{"XDG_DATA_HOME", xdg}, std::pair{"HOME", home}}) {
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }

  TempDir temp;
  const std::string first = new_gallery_image_path(temp.path().string(), "a lake/at night?");
  EXPECT_EQ(fs::path(first).parent_path(), temp.path() / "images");
  EXPECT_TRUE(fs::is_directory(temp.path() / "images"));
  EXPECT_NE(first.find("_a_lake_at_night.png"), std::string::npos) << first;
  write_file(first, "x");
  const std::string second = new_gallery_image_path(temp.path().string(), "a lake/at night?");
  EXPECT_NE(second, first);
}

namespace {

// Starts gallery_writer on `db` with its stdout on a pipe; returns the pid and
// the pipe's read end.
std::pair<pid_t, int> start_writer(const std::string& db) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, -1};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(KVSTUDIO_GALLERY_WRITER, "gallery_writer", db.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Reads from `fd` until `line` has been seen; false after 30 s or at the end.
bool wait_for_line(int fd, const std::string& line, std::string* seen) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen->find(line + "\n") == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buffer[256];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    seen->append(buffer, static_cast<size_t>(n));
  }
  return true;
}

// Kills the writer `delay_ms` after it printed `line`; false when it never did.
bool kill_writer_after(const std::string& db, const std::string& line, int delay_ms) {
  const auto [pid, fd] = start_writer(db);
  if (pid <= 0) {
    ADD_FAILURE() << "cannot start " << KVSTUDIO_GALLERY_WRITER;
    return false;
  }
  std::string seen;
  const bool ready = wait_for_line(fd, line, &seen);
  if (ready) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd);
  EXPECT_TRUE(ready) << "gallery_writer never said '" << line << "' (it said '" << seen << "')";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "gallery_writer ended by itself (status " << status << ") before it was killed";
  return ready;
}

// Every row exactly as the writer made it: entry n is gallery_writer_entry(n),
// the ids are 1..count (nothing half-written, nothing lost in between).
void expect_complete(GalleryStore& store, int64_t* count) {
  EXPECT_EQ(store.integrity_check(), "ok");
  const std::vector<GalleryEntry> rows = store.search({});
  *count = store.count();
  ASSERT_EQ(static_cast<int64_t>(rows.size()), *count);
  std::set<int64_t> ids;
  for (const GalleryEntry& row : rows) {
    ids.insert(row.id);
    const GalleryEntry want = kvs::test::gallery_writer_entry(row.id);
    ASSERT_EQ(row.seed, want.seed) << "row " << row.id;
    EXPECT_EQ(row.prompt, want.prompt) << "row " << row.id;
    EXPECT_EQ(row.png_path, want.png_path) << "row " << row.id;
    EXPECT_EQ(row.model_name, want.model_name) << "row " << row.id;
    EXPECT_EQ(row.policy, want.policy) << "row " << row.id;
    EXPECT_EQ(row.top_k, want.top_k) << "row " << row.id;
    EXPECT_EQ(row.kv_bytes_logical_final, want.kv_bytes_logical_final) << "row " << row.id;
    EXPECT_EQ(row.request_json, want.request_json) << "row " << row.id;
    EXPECT_EQ(row.source, want.source) << "row " << row.id;
  }
  if (*count > 0) {
    EXPECT_EQ(*ids.begin(), 1);
    EXPECT_EQ(*ids.rbegin(), *count);
  }
}

}  // namespace

TEST(GalleryKill, KilledWritersLeaveAReadableGalleryOfCompleteRows) {
  TempDir dir;
  const std::string db = dir.file("gallery.sqlite");
  std::mt19937 rng(20261129);
  std::uniform_int_distribution<int> delay_ms(5, 80);
  int64_t last = 0;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (!kill_writer_after(db, "open", delay_ms(rng))) return;
    GalleryStore store = GalleryStore::open(db);
    int64_t count = 0;
    expect_complete(store, &count);
    EXPECT_GE(count, last);  // what was committed stays
    last = count;
  }
  EXPECT_GT(last, 20) << "the writer hardly wrote: the kills did not land mid-write";
}

TEST(GalleryKill, KilledWhileCreatingTheGallery) {
  // Right after start-up the writer is creating the folder, the file and the
  // schema: a kill there leaves no gallery or a whole empty one.
  for (int delay = 0; delay < 4; ++delay) {
    SCOPED_TRACE("delay " + std::to_string(delay) + " ms");
    TempDir dir;
    const std::string db = (dir.path() / "new" / "gallery.sqlite").string();
    if (!kill_writer_after(db, "started", delay)) return;
    GalleryStore store = GalleryStore::open(db);
    int64_t count = 0;
    expect_complete(store, &count);
  }
}
