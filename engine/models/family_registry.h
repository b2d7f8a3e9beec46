#pragma once
// The model families KV Studio knows, one registry line each
// (family_registry.cpp). Torch-free: the window lists families and reads their
// descriptions through here too.
#include <string>
#include <vector>

#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs {

// Every registered family, in registry order (the order `--help` lists them).
const std::vector<const ModelFamily*>& model_families();

// Throws InvalidArgumentError naming the supported families.
const ModelFamily& find_model_family(const std::string& name);
// nullptr when unknown.
const ModelFamily* lookup_model_family(const std::string& name);

// The description of a family by name; nullptr when unknown.
const FamilyDescription* find_family_description(const std::string& name);

// "llamagen, var, mar": for messages.
std::string supported_family_names();

}  // namespace kvs
