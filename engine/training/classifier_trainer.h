#pragma once
// Trains the evaluation classifier (scene_classifier.h) on real world images (run
// folder WORK/classifier; the classifier file WORK/classifier/classifier.safetensors
// is rewritten at every checkpoint).
//
// Augmentation makes it judge generated images by their scene, not by the
// tokenizer's texture: left-right flips, a 3x3 box blur on some images and a
// little Gaussian noise on others.
#include <cstdint>
#include <string>

#include "engine/metrics/scene_classifier.h"
#include "engine/training/training_loop.h"

namespace kvs::training {

struct ClassifierTrainSetup {
  ClassifierConfig model;
  int64_t train_per_class = 500;
  int64_t eval_per_class = 100;
  bool augment = true;
};

// WORK/classifier/classifier.safetensors
std::string classifier_file(const std::string& work_dir);

TrainSummary train_classifier(const TrainOptions& options, const ClassifierTrainSetup& setup);

}  // namespace kvs::training
