#pragma once
// Engine event payloads as Qt meta-types, so that they travel through queued
// signals. Large payloads (a line's preview, masks and attention; a finished
// result) travel as shared pointers to const: one copy, shared by every receiver.
#include <QMetaType>

#include <memory>

#include "engine/models/generation_session.h"
#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"

namespace kvs::ui {

using UnitDonePtr = std::shared_ptr<const kvs::UnitDoneEvent>;
using ResultPtr = std::shared_ptr<const kvs::GenerationResult>;

// Call once before any queued connection carries these types (main, tests).
void registerEngineMetaTypes();

}  // namespace kvs::ui

Q_DECLARE_METATYPE(kvs::StartedEvent)
Q_DECLARE_METATYPE(kvs::TokenProgressEvent)
Q_DECLARE_METATYPE(kvs::PolicyChangedEvent)
Q_DECLARE_METATYPE(kvs::GenerationRequest)
Q_DECLARE_METATYPE(kvs::ui::UnitDonePtr)
Q_DECLARE_METATYPE(kvs::ui::ResultPtr)
