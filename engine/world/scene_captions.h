#pragma once
// English captions of the procedural world's pictures, built from their facts
// (scene_facts.h) by a small grammar: every fact has several phrasings, and the
// phrases are put together in several word orders, e.g.
//   "a seascape at sunset, the sun low on the left, a clear sky and orange tones"
//   "a wide view of the open sea showing colours of orange and the sun sitting low
//    at the left, at the hour of sunset"
//
// Held-out split. Each group of phrasings (one per fact value) and the word orders
// keep some templates out of training: a train caption uses only train templates,
// a held-out caption only held-out ones, so a model trained on train captions is
// evaluated on wordings it has never read. caption_templates() lists every
// template with its split; docs/training.md shows which are held out.
//
// Deterministic: the same (facts, caption seed, split) give the same caption on
// every machine (the world's own random stream, no standard distributions).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/world/scene_facts.h"

namespace kvs::world {

enum class CaptionSplit { train, held_out };
const char* to_string(CaptionSplit s);  // "train", "held-out"
// Parses "train" or "held-out"; throws kvs::InvalidArgumentError otherwise.
CaptionSplit parse_caption_split(const std::string& text);

struct CaptionTemplate {
  std::string id;       // group.index, e.g. "time.sunset.2", "order.4"
  std::string group;    // the id without its index: "time.sunset", "light.sun", "order"
  std::string pattern;  // the phrasing, with {placeholders}
  CaptionSplit split = CaptionSplit::train;
};
// Every phrasing and word order of the grammar, grouped by id prefix. Every group
// has at least one template in each split. Placeholders: {w} where (where_words),
// {h} a height and {s} a side (to_string(Height / Side)), {phase} a moon phase
// (moon_phase_words), {cs} a list of colours and {c} one (to_string(ColourName)),
// {n}/{ns} a noun and its plural, {N} a number word; the word orders combine the
// subject {S}, the time {T} and the list of the other phrases {M}.
const std::vector<CaptionTemplate>& caption_templates();

// The words the grammar fills {w} with for a side ("on the left", "at the left",
// …) and {phase} with ("full", "crescent"), so that a reader of captions
// (prompt_attributes.h) knows every phrasing without a copy of the grammar.
const std::vector<std::string>& where_words(Side side);
const std::vector<std::string>& moon_phase_words();

struct Caption {
  std::string text;
  std::vector<std::string> templates;  // ids of the templates it was built from
  // The facts it mentions: "class", "pattern", "time", "light.side", "light.height",
  // "light.phase", "colours", "clouds", "mist", "object:<noun>", "feature:<id>".
  std::vector<std::string> facts;
};

// A caption of `facts` in the given split. Every fact the grammar knows for the
// picture's class is mentioned (the light, the colours, the clouds, each object and
// feature); the caption seed picks phrasings, where-words and the word order.
Caption scene_caption(const SceneFacts& facts, uint64_t caption_seed, CaptionSplit split);

// Number words ("one" … "twelve") for counts; digits above that.
std::string number_word(int n);

}  // namespace kvs::world
