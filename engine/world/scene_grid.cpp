#include "engine/world/scene_grid.h"

#include <algorithm>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "engine/core/errors.h"
#include "engine/world/scene_world.h"

namespace kvs::world {

RgbImage render_scene_grid(const SceneGridOptions& options) {
  if (options.per_class < 1 || options.per_class > 64)
    throw InvalidArgumentError(std::string("samples per class must be 1..64, got ") +
                               std::to_string(options.per_class));
  std::vector<int> rows = options.classes;
  if (rows.empty())
    for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c) rows.push_back(c);
  const int size = options.size_px;
  // Render first: this validates the classes and the size before anything is drawn.
  std::vector<std::vector<RgbImage>> tiles;
  for (const int c : rows) {
    std::vector<RgbImage> row;
    for (int j = 0; j < options.per_class; ++j)
      row.push_back(render_scene(c, options.seed + static_cast<uint64_t>(j), size));
    tiles.push_back(std::move(row));
  }

  const int font = cv::FONT_HERSHEY_SIMPLEX;
  const double scale = std::clamp(static_cast<double>(size) / 140.0, 0.35, 0.8);
  const int thickness = size >= 96 ? 2 : 1;
  int label_w = 0, baseline = 0;
  for (const int c : rows) {
    const cv::Size t = cv::getTextSize(scene_classes()[static_cast<std::size_t>(c)].name, font, scale, thickness,
                                       &baseline);
    label_w = std::max(label_w, t.width);
  }
  const int gap = std::max(2, size / 32);
  const int left = label_w + 3 * gap;
  const int width = left + options.per_class * (size + gap);
  const int height = gap + static_cast<int>(rows.size()) * (size + gap);
  cv::Mat sheet(height, width, CV_8UC3, cv::Scalar(30, 30, 34));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = gap + static_cast<int>(r) * (size + gap);
    const std::string& name = scene_classes()[static_cast<std::size_t>(rows[r])].name;
    const cv::Size t = cv::getTextSize(name, font, scale, thickness, &baseline);
    cv::putText(sheet, name, cv::Point(left - 2 * gap - t.width, y + (size + t.height) / 2), font, scale,
                cv::Scalar(235, 235, 235), thickness, cv::LINE_AA);
    for (int j = 0; j < options.per_class; ++j) {
      const RgbImage& tile = tiles[r][static_cast<std::size_t>(j)];
      cv::Mat src(size, size, CV_8UC3, const_cast<uint8_t*>(tile.pixels.data()));
      src.copyTo(sheet(cv::Rect(left + j * (size + gap), y, size, size)));
    }
  }
  RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.assign(sheet.data, sheet.data + static_cast<std::size_t>(width) * height * 3);
  return out;
}

}  // namespace kvs::world
