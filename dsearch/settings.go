package dsearch

import "github.com/ddrun/ddrun/engine"

// Settings choose the dual solver that bounds every node on the workers:
// package engine owns them (engine.NodeSettings: which algorithm, with
// which options, and the node solver they build), so that algorithms are
// dispatched by name in one place. They travel to the workers as msgpack.
type Settings = engine.NodeSettings
