// Package managed holds the managed hash resolver (kind "managed"): a hash
// ring over collections that a template names and specifies, as the .NET
// SDK's ManagedHashPartitionResolver sample had it, made safe for many
// processes. Its JSON form names a database, a collection prefix and a
// count ("u" and 3: u0, u1, u2) and the spec every collection is created
// with (partition-key path, default TTL, indexing policy); Ensure creates
// the missing ones when a process starts, and Resize changes the count by
// resharding through the transition manager (transition.Reshard), so the
// documents whose placement changes move under live traffic and nothing is
// lost. The ring places keys exactly as a "hash" resolver over the same
// links does.
package managed
