#pragma once
// What a picture of the procedural world shows, in terms a person would use to
// describe it: the time of day, where the sun or moon is, the main colours, the
// weather, the countable objects and where they stand.
//
// The painters fill these in while they draw, from the very values they draw with
// (never re-derived afterwards), so a caption built from the facts describes the
// pixels of the same (class, seed) exactly. scene_world.h renders a scene together
// with its facts, or gives the facts alone.
#include <cstdint>
#include <string>
#include <vector>

namespace kvs::world {

enum class TimeOfDay { unspecified, day, dawn, evening, sunset, dusk, night };

// Thirds of the picture's width; heights split at kHighLightBelowY.
enum class Side { left, centre, right };
enum class Height { high, low };

// Plain English colour names: the hue families first (what a pixel measure can
// tell apart), then the neutrals and brown.
enum class ColourName { red, orange, yellow, green, teal, blue, purple, pink, brown, white, grey, black };

enum class LightKind { none, sun, moon };
enum class Water { none, sea, lake, underwater };

// A light (the sun or moon) whose disc is at y < this is "high" in the picture.
inline constexpr float kHighLightBelowY = 0.25f;

struct SceneLight {
  LightKind kind = LightKind::none;
  // The disc (or glow) itself is in the picture. False where only its light is:
  // sunlit mountain faces, light rays under water. Height is only meaningful with a disc.
  bool disc = false;
  float x = 0.5f, y = 0.f;  // the disc's centre in normalised picture coordinates
  Side side = Side::centre;
  Height height = Height::high;
  bool crescent = false;  // the moon as a crescent rather than full
};

struct SceneObject {
  std::string noun;    // singular, e.g. "vase", "strand of seaweed"
  std::string plural;  // e.g. "vases", "strands of seaweed"
  int count = 1;
  bool coloured = false;
  ColourName colour = ColourName::red;
  bool placed = false;  // single objects: where it stands
  Side side = Side::centre;
};

// Feature ids (things that are there or not), a fixed vocabulary the caption
// grammar knows a phrasing for.
inline constexpr const char* kFeatureMilkyWay = "milky_way";
inline constexpr const char* kFeatureTrees = "trees";
inline constexpr const char* kFeatureSnowyPeaks = "snowy_peaks";
inline constexpr const char* kFeatureHillsBehind = "hills_behind";
inline constexpr const char* kFeaturePath = "path";
inline constexpr const char* kFeatureTablecloth = "tablecloth";
inline constexpr const char* kFeatureWoodenTable = "wooden_table";
inline constexpr const char* kFeatureTilted = "tilted";
inline constexpr const char* kFeatureBubbles = "bubbles";

struct SceneFacts {
  int class_id = -1;
  uint64_t seed = 0;
  TimeOfDay time = TimeOfDay::unspecified;
  SceneLight light;
  std::vector<ColourName> colours;  // the main colours, most prominent first, no repeats
  int clouds = -1;                  // clouds in the sky; -1 where the class has no sky
  bool mist = false;
  Water water = Water::none;
  std::vector<SceneObject> objects;
  std::vector<std::string> features;  // kFeature* ids
  std::string pattern;                // tiling only: "checkerboard", "diamonds", ...
};

Side side_of(float x);
Height height_of(float y);

// The facts of the same picture mirrored left-right: the light's x becomes 1 - x
// and every left becomes right and back (the centre stays). Nothing else the
// facts record has a direction, so a mirrored picture captioned from these facts
// is described exactly (the text-to-image demo trains on such pairs).
SceneFacts mirrored(const SceneFacts& facts);

// The plain English name of an RGB colour (components in [0, 1]).
ColourName colour_name(float r, float g, float b);

const char* to_string(TimeOfDay t);
const char* to_string(Side s);
const char* to_string(Height h);
const char* to_string(ColourName c);
const char* to_string(LightKind k);
const char* to_string(Water w);

// Parses a colour word ("red", "grey", ...); throws kvs::InvalidArgumentError otherwise.
ColourName parse_colour_name(const std::string& word);

// The facts as one JSON object (stable key order), for the CLI and data sets.
std::string facts_json(const SceneFacts& facts);

}  // namespace kvs::world
