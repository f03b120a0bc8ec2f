// Package transition holds the transition resolver (kind "transition"): a
// resolver between two others, current and next, as a database moves from
// one placement to the other. New documents go to one of them (writeTo,
// "next" by default, as the .NET SDK's sample had it); reads go to current,
// next, both (every collection of either, each once, next first) or none
// (refused with ErrMigrationInProgress), as its read mode says.
//
// A transition is what a router routes by while a reshard moves documents
// (the resharding manager, when it is built, publishes one in the
// database's shared state); on its own it moves nothing.
package transition
