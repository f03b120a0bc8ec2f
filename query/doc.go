// Package query is docshard's Cosmos DB NoSQL query engine: one syntax tree
// serves the embedded store, which must answer exactly as Cosmos DB would,
// and the router, which must know what to merge when a query runs on many
// collections.
//
// Parse reads a query into a *Query (SELECT [DISTINCT] [TOP n] [VALUE] with
// *, expressions, aliases and constructors; FROM c, FROM x IN c.arr, JOIN;
// WHERE; GROUP BY; ORDER BY; OFFSET/LIMIT; @parameters; EXISTS, ARRAY and
// scalar subqueries), reporting a *SyntaxError with line, column, what was
// expected and what was found. Compile binds parameters and turns the tree
// into closures; a Program then runs over Docs (documents decoded once by
// NewDoc and shared read-only) with Cosmos DB's semantics: undefined is
// distinct from null and never an error; comparisons across types are
// undefined, so the row is filtered out; logic is three-valued; ORDER BY
// orders undefined, null, booleans, numbers, strings; aggregates skip
// undefined, COUNT over no rows is 0, and SUM or AVG meeting a non-number is
// undefined. ORDER BY with TOP or LIMIT keeps only offset+limit rows in a
// heap.
//
// PlanFanOut plans a query for many collections: the Plan holds the SQL each
// collection runs (ORDER BY rows carry their sort keys beside the payload,
// TOP/OFFSET/LIMIT widen to offset+limit, AVG becomes SUM and COUNT, GROUP BY
// returns partial aggregates per group, DISTINCT applies twice) and the
// pieces the client merges with: CompareKeys for a k-way ORDER BY merge,
// a Merger for aggregates and groups, and the DISTINCT, OFFSET and LIMIT to
// apply last. MergeAll is the reference merge over whole result lists.
// Shapes that cannot be merged exactly are errors wrapping ErrUnmergeable.
//
// Values are Go JSON values (nil, bool, float64, string, []any,
// map[string]any) plus Undefined. Why not cosmium's executor: it answers
// ordinary queries wrongly (integer literals never compare to document
// numbers, COUNT over no rows returns nothing, ARRAY_CONTAINS panics,
// single-quoted strings change the query); this engine is tested against
// Cosmos DB's documented examples (testdata/conformance) and runs the same
// filter faster (BenchmarkFilter).
package query
