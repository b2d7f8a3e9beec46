#pragma once
// A family's model held on its device behind the LoadedModel interface: the
// families differ only in the model type and the session that runs it, so they
// share this one holder instead of a class each.
#include <functional>
#include <string>
#include <utility>

#include "engine/session/model_family.h"

namespace kvs {

template <typename Model>
class LoadedModelOf : public LoadedModel {
 public:
  using Runner = std::function<GenerationResult(const Model&, const GenerationRequest&, const RunContext&)>;
  LoadedModelOf(Model model, Runner runner) : model_(std::move(model)), runner_(std::move(runner)) {}
  std::string name() const override { return model_.name; }
  GenerationResult run(const GenerationRequest& request, const RunContext& context) override {
    return runner_(model_, request, context);
  }
  // The model as loaded: tests read its weights' dtype through it.
  const Model& model() const { return model_; }

 private:
  Model model_;
  Runner runner_;
};

}  // namespace kvs
