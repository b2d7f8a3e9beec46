#pragma once
// Where the per-user gallery lives: one folder holding the database
// (gallery.sqlite) and the images the window writes (images/). The CLI keeps
// its PNGs where --out puts them and records their paths. Torch-free.
#include <string>

namespace kvs {

// $KVSTUDIO_GALLERY_DIR if set, else $XDG_DATA_HOME/kvstudio/gallery, else
// $HOME/.local/share/kvstudio/gallery (the XDG base-directory default). Throws
// FileError when none of the three is set. Creates nothing.
std::string default_gallery_dir();

// <dir>/gallery.sqlite
std::string gallery_database_path(const std::string& gallery_dir);

// <dir>/images
std::string gallery_images_dir(const std::string& gallery_dir);

// A PNG path under <dir>/images that no file holds yet:
// <UTC date and time>_<stem>.png, with _2, _3, ... on a clash. Creates the
// images folder (FileError when it cannot), not the file.
std::string new_gallery_image_path(const std::string& gallery_dir, const std::string& stem);

}  // namespace kvs
