// gallery_writer DB: opens the gallery at DB and adds entries until it is killed
// (GalleryKill in test_gallery_store.cpp kills it at random moments). It says
// "started" when it runs and "open" once the database is open, on stdout, so
// that the test times its kills from there and not from the program's loading.
#include <cstdio>
#include <exception>

#include "engine/gallery/gallery_store.h"
#include "tests/engine/gallery_writer_entry.h"

namespace {

void say(const char* line) {
  std::fputs(line, stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: gallery_writer DB\n", stderr);
    return 2;
  }
  try {
    say("started\n");
    kvs::GalleryStore store = kvs::GalleryStore::open(argv[1]);
    int64_t n = store.count();
    say("open\n");
    for (;;) store.add(kvs::test::gallery_writer_entry(++n));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gallery_writer: %s\n", e.what());
    return 1;
  }
}
