#include "engine/gallery/gallery_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>

#include "engine/core/errors.h"

namespace kvs {
namespace {
namespace fs = std::filesystem;

// PRAGMA application_id: marks the file as a KV Studio gallery ("KVSG"), so that
// another program's SQLite file under the same name is refused, not altered.
constexpr int kApplicationId = 0x4B565347;

// A writer waits this long for another process's transaction before failing.
constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kSchema = R"sql(
CREATE TABLE images (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created TEXT NOT NULL,
  png_path TEXT NOT NULL,
  model_name TEXT NOT NULL,
  model_dir TEXT NOT NULL,
  family TEXT NOT NULL,
  prompt TEXT NOT NULL,
  negative_prompt TEXT NOT NULL,
  class_id INTEGER NOT NULL,
  class_name TEXT NOT NULL,
  seed INTEGER NOT NULL,
  policy TEXT NOT NULL,
  cfg_scale REAL NOT NULL,
  temperature REAL NOT NULL,
  top_k INTEGER NOT NULL,
  top_p REAL NOT NULL,
  steps INTEGER NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  tokens_per_second REAL NOT NULL,
  elapsed_ms REAL NOT NULL,
  kv_bytes_full INTEGER NOT NULL,
  kv_bytes_peak INTEGER NOT NULL,
  kv_bytes_logical_final INTEGER NOT NULL,
  batch_index INTEGER NOT NULL,
  request_json TEXT NOT NULL,
  source TEXT NOT NULL
);
CREATE INDEX images_by_created ON images(created);
CREATE INDEX images_by_model ON images(model_name COLLATE NOCASE);
)sql";

// Every column but id, in the order of GalleryEntry and of the INSERT's values.
constexpr const char* kColumns =
    "created, png_path, model_name, model_dir, family, prompt, negative_prompt, class_id, class_name, seed, policy, "
    "cfg_scale, temperature, top_k, top_p, steps, width, height, tokens_per_second, elapsed_ms, kv_bytes_full, "
    "kv_bytes_peak, kv_bytes_logical_final, batch_index, request_json, source";
constexpr int kColumnCount = 26;

// SQLite's result as the engine's errors: a file that is not a database or is
// damaged is a FormatError, anything else (permissions, a full disk, a lock held
// too long) a FileError; both name the file.
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& path, const std::string& doing) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_NOTADB: throw FormatError("gallery " + path + " is not a SQLite database (" + detail + ")");
    case SQLITE_CORRUPT: throw FormatError("gallery " + path + " is corrupt (" + detail + ")");
    default: throw FileError("gallery " + path + " cannot be " + doing + " (" + detail + ")");
  }
}

void exec(sqlite3* db, const std::string& path, const std::string& sql, const char* doing) {
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, path, doing);
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql, const char* doing)
      : db_(db), path_(path), doing_(doing) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db_, rc, path_, doing_);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, int64_t value) { check(sqlite3_bind_int64(stmt_, index, value)); }
  void bind(int index, double value) {
    // SQLite stores NaN as NULL, which a NOT NULL column refuses: a figure that
    // could not be measured is kept as 0.
    check(sqlite3_bind_double(stmt_, index, std::isfinite(value) ? value : 0.0));
  }
  void bind(int index, const std::string& value) {
    check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT));
  }
  int parameter(const char* name) const { return sqlite3_bind_parameter_index(stmt_, name); }

  // True while there is a row to read.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, path_, doing_);
  }

  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  std::string text(int column) const {
    const unsigned char* value = sqlite3_column_text(stmt_, column);
    if (!value) return {};
    return std::string(reinterpret_cast<const char*>(value), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) fail(db_, rc, path_, doing_);
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  const std::string& path_;
  const char* doing_;
};

// BEGIN IMMEDIATE takes the write lock at once, so that two writers queue on the
// busy timeout rather than one failing midway; not committed: rolled back.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db_, path_, "BEGIN IMMEDIATE", "written");
  }
  ~Transaction() {
    if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, path_, "COMMIT", "written");
    committed_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool committed_ = false;
};

int64_t pragma_integer(sqlite3* db, const std::string& path, const char* pragma) {
  Statement s(db, path, std::string("PRAGMA ") + pragma, "read");
  return s.step() ? s.integer(0) : 0;
}

int64_t table_count(sqlite3* db, const std::string& path, const char* where) {
  Statement s(db, path, std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table'") + where, "read");
  return s.step() ? s.integer(0) : 0;
}

// The schema version of the file, 0 for one with no schema yet. Refuses a newer
// version and a file that is another program's database (its application id,
// or tables without a version).
int64_t gallery_version(sqlite3* db, const std::string& path) {
  const int64_t version = pragma_integer(db, path, "user_version");
  const int64_t application = pragma_integer(db, path, "application_id");
  if (version > GalleryStore::kSchemaVersion)
    throw FormatError("gallery " + path + " has schema version " + std::to_string(version) +
                      ", newer than this KV Studio reads (" + std::to_string(GalleryStore::kSchemaVersion) +
                      "): it was written by a newer KV Studio");
  if (application != 0 && application != kApplicationId)
    throw FormatError("gallery " + path + " is another program's SQLite database, not a KV Studio gallery");
  if (version == 0 && table_count(db, path, "") > 0)
    throw FormatError("gallery " + path + " is a SQLite database but not a KV Studio gallery");
  return version;
}

GalleryEntry read_entry(const Statement& s) {
  GalleryEntry e;
  int c = 0;
  e.id = s.integer(c++);
  e.created = s.text(c++);
  e.png_path = s.text(c++);
  e.model_name = s.text(c++);
  e.model_dir = s.text(c++);
  e.family = s.text(c++);
  e.prompt = s.text(c++);
  e.negative_prompt = s.text(c++);
  e.class_id = s.integer(c++);
  e.class_name = s.text(c++);
  e.seed = static_cast<uint64_t>(s.integer(c++));  // stored as its 64-bit pattern
  e.policy = s.text(c++);
  e.cfg_scale = s.real(c++);
  e.temperature = s.real(c++);
  e.top_k = s.integer(c++);
  e.top_p = s.real(c++);
  e.steps = s.integer(c++);
  e.width = s.integer(c++);
  e.height = s.integer(c++);
  e.tokens_per_second = s.real(c++);
  e.elapsed_ms = s.real(c++);
  e.kv_bytes_full = s.integer(c++);
  e.kv_bytes_peak = s.integer(c++);
  e.kv_bytes_logical_final = s.integer(c++);
  e.batch_index = s.integer(c++);
  e.request_json = s.text(c++);
  e.source = s.text(c++);
  return e;
}

// A LIKE pattern that matches `text` literally somewhere ('\' escapes).
std::string like_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '%' || c == '_') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string gallery_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

GalleryStore GalleryStore::open(const std::string& db_path) {
  if (db_path.empty()) throw InvalidArgumentError("the gallery's database path is empty");
  const fs::path path(db_path);
  std::error_code ec;
  if (path.has_parent_path() && !fs::is_directory(path.parent_path(), ec)) {
    fs::create_directories(path.parent_path(), ec);
    if (ec || !fs::is_directory(path.parent_path()))
      throw FileError("gallery folder " + path.parent_path().string() + " cannot be created" +
                      (ec ? ": " + ec.message() : ""));
  }
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) throw FileError("gallery " + db_path + " is not a file");

  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(db_path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  GalleryStore store(raw, db_path);  // closes the handle on every way out
  if (rc != SQLITE_OK) fail(raw, rc, db_path, "opened");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);

  // The header first: a file that is not a gallery is refused before anything
  // (the journal mode included) is written to it.
  int64_t version = gallery_version(raw, db_path);

  // Write-ahead log + a sync at every commit: a kill mid-write leaves the
  // database as of the last commit (the log's torn tail is ignored on open).
  {
    Statement mode(raw, db_path, "PRAGMA journal_mode=WAL", "written");
    mode.step();
  }
  exec(raw, db_path, "PRAGMA synchronous=FULL", "opened");

  if (version == 0) {
    // Created in one transaction with its version: a kill leaves no schema or
    // the whole one. Another process may have just created it: read again under the lock.
    Transaction create(raw, db_path);
    version = gallery_version(raw, db_path);
    if (version == 0) {
      exec(raw, db_path, kSchema, "written");
      exec(raw, db_path, "PRAGMA application_id=" + std::to_string(kApplicationId), "written");
      exec(raw, db_path, "PRAGMA user_version=" + std::to_string(kSchemaVersion), "written");
    }
    create.commit();
  }
  if (table_count(raw, db_path, " AND name = 'images'") != 1)
    throw FormatError("gallery " + db_path + " has no images table (not a KV Studio gallery?)");
  return store;
}

GalleryStore::GalleryStore(GalleryStore&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

GalleryStore& GalleryStore::operator=(GalleryStore&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

GalleryStore::~GalleryStore() {
  if (db_) sqlite3_close_v2(db_);
}

int64_t GalleryStore::add(const GalleryEntry& e) {
  std::string sql = std::string("INSERT INTO images (") + kColumns + ") VALUES (";
  for (int i = 1; i <= kColumnCount; ++i) sql += (i > 1 ? ", ?" : "?") + std::to_string(i);
  sql += ")";
  Transaction write(db_, path_);
  Statement s(db_, path_, sql, "written");
  int c = 1;
  s.bind(c++, e.created.empty() ? gallery_timestamp_now() : e.created);
  s.bind(c++, e.png_path);
  s.bind(c++, e.model_name);
  s.bind(c++, e.model_dir);
  s.bind(c++, e.family);
  s.bind(c++, e.prompt);
  s.bind(c++, e.negative_prompt);
  s.bind(c++, e.class_id);
  s.bind(c++, e.class_name);
  s.bind(c++, static_cast<int64_t>(e.seed));
  s.bind(c++, e.policy);
  s.bind(c++, e.cfg_scale);
  s.bind(c++, e.temperature);
  s.bind(c++, e.top_k);
  s.bind(c++, e.top_p);
  s.bind(c++, e.steps);
  s.bind(c++, e.width);
  s.bind(c++, e.height);
  s.bind(c++, e.tokens_per_second);
  s.bind(c++, e.elapsed_ms);
  s.bind(c++, e.kv_bytes_full);
  s.bind(c++, e.kv_bytes_peak);
  s.bind(c++, e.kv_bytes_logical_final);
  s.bind(c++, e.batch_index);
  s.bind(c++, e.request_json);
  s.bind(c++, e.source);
  s.step();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  write.commit();
  return id;
}

std::vector<GalleryEntry> GalleryStore::search(const GalleryQuery& q) const {
  std::string sql = std::string("SELECT id, ") + kColumns + " FROM images WHERE 1";
  if (!q.text.empty())
    sql +=
        " AND (prompt LIKE :text ESCAPE '\\' OR class_name LIKE :text ESCAPE '\\' OR model_name LIKE :text ESCAPE "
        "'\\' OR policy LIKE :text ESCAPE '\\')";
  if (q.model) sql += " AND model_name = :model COLLATE NOCASE";
  if (q.policy) sql += " AND policy LIKE :policy ESCAPE '\\'";
  sql += " ORDER BY created DESC, id DESC LIMIT :limit OFFSET :offset";
  if (q.limit < 0 || q.offset < 0) throw InvalidArgumentError("gallery search: limit and offset must be >= 0");
  Statement s(db_, path_, sql, "read");
  if (!q.text.empty()) s.bind(s.parameter(":text"), std::string("%").append(like_escaped(q.text)).append("%"));
  if (q.model) s.bind(s.parameter(":model"), *q.model);
  if (q.policy) s.bind(s.parameter(":policy"), like_escaped(*q.policy) + "%");
  s.bind(s.parameter(":limit"), q.limit == 0 ? int64_t{-1} : q.limit);  // LIMIT -1: no limit
  s.bind(s.parameter(":offset"), q.offset);
  std::vector<GalleryEntry> entries;
  while (s.step()) entries.push_back(read_entry(s));
  return entries;
}

std::optional<GalleryEntry> GalleryStore::get(int64_t id) const {
  Statement s(db_, path_, std::string("SELECT id, ") + kColumns + " FROM images WHERE id = ?1", "read");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_entry(s);
}

bool GalleryStore::remove(int64_t id, bool delete_png) {
  std::string png;
  {
    Transaction write(db_, path_);
    {
      Statement find(db_, path_, "SELECT png_path FROM images WHERE id = ?1", "read");
      find.bind(1, id);
      if (!find.step()) return false;
      png = find.text(0);
    }
    Statement erase(db_, path_, "DELETE FROM images WHERE id = ?1", "written");
    erase.bind(1, id);
    erase.step();
    write.commit();
  }
  if (delete_png && !png.empty()) {
    std::error_code ec;
    fs::remove(png, ec);
    if (ec)
      throw FileError("gallery entry " + std::to_string(id) + " was removed but its image " + png +
                      " cannot be deleted: " + ec.message());
  }
  return true;
}

int64_t GalleryStore::count() const {
  Statement s(db_, path_, "SELECT count(*) FROM images", "read");
  return s.step() ? s.integer(0) : 0;
}

std::vector<std::string> GalleryStore::export_to(const std::vector<int64_t>& ids, const std::string& folder) const {
  if (ids.empty()) throw InvalidArgumentError("nothing to export: no gallery ids given");
  if (folder.empty()) throw InvalidArgumentError("no folder to export the gallery's images to");
  std::vector<GalleryEntry> entries;
  std::set<int64_t> seen;
  std::string missing;
  for (const int64_t id : ids) {
    if (!seen.insert(id).second) continue;  // an id given twice is copied once
    std::optional<GalleryEntry> entry = get(id);
    if (!entry) throw InvalidArgumentError("no image " + std::to_string(id) + " in the gallery " + path_);
    std::error_code ec;
    if (!fs::is_regular_file(entry->png_path, ec))
      missing += (missing.empty() ? "" : ", ") + entry->png_path + " (id " + std::to_string(id) + ")";
    entries.push_back(std::move(*entry));
  }
  if (!missing.empty()) throw FileError("cannot export: the image files are gone: " + missing);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder))
    throw FileError("export folder " + folder + " cannot be created" + (ec ? ": " + ec.message() : ""));
  std::vector<std::string> written;
  for (const GalleryEntry& e : entries) {
    const fs::path source(e.png_path);
    const std::string stem = source.stem().string(), extension = source.extension().string();
    fs::path target = fs::path(folder) / source.filename();
    for (int i = 2; fs::exists(target, ec); ++i)
      target = fs::path(folder) / (stem + "_" + std::to_string(i) + extension);
    fs::copy_file(source, target, fs::copy_options::none, ec);
    if (ec) throw FileError("cannot copy " + source.string() + " to " + target.string() + ": " + ec.message());
    written.push_back(target.string());
  }
  return written;
}

std::string GalleryStore::integrity_check() const {
  Statement s(db_, path_, "PRAGMA integrity_check", "read");
  std::string problems;
  while (s.step()) {
    if (!problems.empty()) problems += '\n';
    problems += s.text(0);
  }
  return problems;
}

}  // namespace kvs
