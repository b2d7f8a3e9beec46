#pragma once
// Pixel measures of a few scene facts: given a picture and the attribute value a
// prompt asked for, say whether the picture shows it. They judge generated images
// against their captions, so they look only at pixels (RgbImage, torch-free) and
// are validated on the world's own pictures against the painters' facts
// (tests/engine/test_scene_measures.cpp; accuracies in docs/training.md).
#include <optional>
#include <vector>

#include "engine/image/rgb_image.h"
#include "engine/world/scene_facts.h"

namespace kvs::world {

// ---- Time of day, from how light the picture is --------------------------------
// Pictures by their mean luminance: bright (daylight, dawn, evening and most
// sunsets), dim (dusk, a late sunset) or dark (night). How warm the light is does
// not tell the times apart on its own (a desert's horizon is as warm as an evening
// lake's), so golden light is not judged.
enum class Lightness { bright, dim, dark };
const char* to_string(Lightness l);
Lightness measure_lightness(const RgbImage& image);
// Night is dark, dusk dim or dark, a sunset bright or dim, day, dawn and evening
// bright. Throws kvs::InvalidArgumentError for TimeOfDay::unspecified.
bool matches_time_of_day(const RgbImage& image, TimeOfDay asked);

// ---- Where the sun or moon is, from the brightest region ----------------------
// Where the sun or moon is, in normalised coordinates: x is the centre of the
// brightest glow (luminance blurred over a tenth of the picture, so a disc and its
// glow outweigh a bright horizon or a lit cloud), y the brightest disc inside that
// glow (blurred over a twentieth).
struct BrightSpot {
  float x = 0.5f, y = 0.5f;
};
BrightSpot brightest_spot(const RgbImage& image);
bool matches_light_side(const RgbImage& image, Side asked);
bool matches_light_height(const RgbImage& image, Height asked);

// ---- Named colours, from hue -----------------------------------------------------
// The fraction of pixels of the named colour. For hue families (red … pink) a
// saturated pixel counts when its hue lies within the family's range widened by a
// few degrees, so a colour on a family border counts for both; neutrals and brown
// count by colour_name.
float colour_fraction(const RgbImage& image, ColourName colour);
// A picture shows a colour when at least this fraction of it has that colour.
inline constexpr float kColourMinFraction = 0.1f;
bool matches_colour(const RgbImage& image, ColourName asked);

// ---- Clouds, from white puffs against the sky ---------------------------------
// Whether the sky shows clouds: in the upper third of the picture (where the
// world draws its clouds), the share of pixels much whiter than their row's sky.
// Per row the sky's level is the lower quartile of the pixels' whiteness (the
// smallest channel: white clouds are high in all three, a blue or orange sky is
// low in one), so a sky that pales towards the horizon is not a cloud; a pixel
// counts when it is kCloudWhiteMargin above that level and nearly grey.
enum class CloudCover { clear, cloudy };
const char* to_string(CloudCover c);
float cloud_fraction(const RgbImage& image);
// A picture shows clouds when at least this share of its upper third is cloud.
inline constexpr float kCloudMinFraction = 0.01f;
bool matches_cloud_cover(const RgbImage& image, CloudCover asked);
// The cover a scene's facts describe (facts.clouds: 0 clear, 1 or more cloudy);
// nullopt where the class has no sky (clouds < 0).
std::optional<CloudCover> cloud_cover_of(const SceneFacts& facts);

// ---- Where each measure is trusted ------------------------------------------------
// The classes each measure was validated on (>= 95 % right against the facts,
// tests/engine/test_scene_measures.cpp). On the others a picture can show the fact
// in a way the measure does not read: light without a disc (sunlit mountain faces,
// rays under water), the city's small moon among its lit windows, the desert sun's
// glow clipping into its bright horizon, the colours of small objects. A judge
// that knows the picture's class skips the rest. Every class with a time of day
// is measurable for time.
bool light_side_measurable(int class_id);    // sunset_sea, night_sky, desert, forest
bool light_height_measurable(int class_id);  // sunset_sea, night_sky, forest
bool colour_measurable(int class_id);        // tiling (its first hue colour)
bool clouds_measurable(int class_id);        // mountains, lake, hills, flower_fields

}  // namespace kvs::world
