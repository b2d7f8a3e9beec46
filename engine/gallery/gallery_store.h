#pragma once
// The per-user gallery: every image the window or `kvstudio-cli generate` made,
// with how it was made, in one SQLite database (gallery_location.h says where).
//
// Why SQLite, and how it is used: a kill or a crash in the middle of a write
// must lose at most the image being written and never leave the file
// unreadable. Each write is one transaction, the journal is a write-ahead log
// and every commit is synced (synchronous=FULL), so after a kill the database
// opens as it was after the last commit. Several processes (the window, a CLI
// run beside it) may write at once: a writer waits for the other's
// transaction (a busy timeout) instead of failing.
//
// sqlite3.h stays in the .cpp files. A store is used from one thread at a
// time; each thread or process opens its own. Torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/gallery/gallery_entry.h"

struct sqlite3;

namespace kvs {

// The current time as the gallery writes it: UTC, ISO-8601, to the second
// ("2026-11-29T06:12:00Z", which sorts as it reads).
std::string gallery_timestamp_now();

struct GalleryQuery {
  // Case-insensitive substring (ASCII letters fold) of the prompt, the class
  // name, the model name or the policy; empty: every entry. '%' and '_' match
  // themselves.
  std::string text;
  std::optional<std::string> model;   // the model name, whole (case-insensitive)
  std::optional<std::string> policy;  // a prefix of the policy spec: "linear" matches "linear:rho=1/4"
  int64_t limit = 0;                  // 0: no limit
  int64_t offset = 0;
};

class GalleryStore {
 public:
  // The schema this build writes; PRAGMA user_version holds a file's. A newer
  // file is refused (FormatError), so that an older KV Studio never writes
  // rows a newer one cannot read.
  static constexpr int kSchemaVersion = 1;

  // Opens the database at `db_path`, creating its folder, the file and the
  // schema when they are missing. Throws FileError when it cannot be created,
  // opened or written, FormatError when the file is not a SQLite database, is
  // corrupt, is another program's database or has a newer schema; messages
  // name the file.
  static GalleryStore open(const std::string& db_path);

  GalleryStore(GalleryStore&& other) noexcept;
  GalleryStore& operator=(GalleryStore&& other) noexcept;
  GalleryStore(const GalleryStore&) = delete;
  GalleryStore& operator=(const GalleryStore&) = delete;
  ~GalleryStore();

  const std::string& path() const { return path_; }

  // Stores the entry (its id is ignored; an empty `created` becomes now) and
  // returns its id. Ids grow and are never reused, also after a removal.
  int64_t add(const GalleryEntry& entry);
  // Newest first (by `created`, then by id).
  std::vector<GalleryEntry> search(const GalleryQuery& query) const;
  std::optional<GalleryEntry> get(int64_t id) const;
  // False when there is no such entry. With `delete_png` the PNG goes too, after
  // the row (a kill between them leaves a stray file, never a row without its
  // image); a missing PNG is not an error, one that cannot be deleted is
  // (FileError naming it, the row already removed).
  bool remove(int64_t id, bool delete_png);
  int64_t count() const;
  // Copies the entries' PNGs into `folder` (created when missing) under their own
  // names, `name_2.png`, ... where a name is taken, and returns the paths written.
  // Everything is checked before anything is copied: an unknown id is an
  // InvalidArgumentError, PNGs that are gone a FileError naming them all.
  std::vector<std::string> export_to(const std::vector<int64_t>& ids, const std::string& folder) const;
  // SQLite's PRAGMA integrity_check: "ok", or the problems it found, one a line.
  std::string integrity_check() const;

 private:
  GalleryStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kvs
