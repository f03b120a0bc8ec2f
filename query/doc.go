// Package query is docshard's Cosmos DB NoSQL query engine: one syntax tree
// serves the embedded store, which must answer exactly as Cosmos DB would,
// and the router, which must know what to merge when a query runs on many
// collections. Nothing else in docshard parses SQL.
//
// # Parsing and running (the store)
//
// Parse reads a query into a *Query (SELECT [DISTINCT] [TOP n] [VALUE] with
// *, expressions, aliases and object/array constructors; FROM and JOIN
// sources as Cosmos DB's grammar has them: a path with an alias, given
// (FROM c AS x, JOIN c.o AS o) or inferred (FROM c.id binds id), x IN a
// path (FROM x IN c.arr, JOIN x IN c.arr), or a subquery (FROM (SELECT ...)
// AS x, JOIN (SELECT VALUE t FROM t IN c.tags) AS t, x IN (SELECT ...));
// WHERE; GROUP BY; ORDER BY with ASC/DESC; OFFSET m LIMIT n; @parameters;
// EXISTS, ARRAY and scalar subqueries; keywords in any case). A FROM
// subquery of the whole query ranges over the collection (SELECT VALUE
// COUNT(1) FROM (SELECT DISTINCT VALUE c.k FROM c) counts distinct keys);
// any other subquery is correlated: it ranges over the values of the row
// that encloses it. A malformed query is a *SyntaxError with byte
// offset, line, column, what was expected and what was found; nothing is
// silently ignored. Compile binds parameters (Go JSON values: strings,
// float64 or any integer type, json.Number, bool, nil, []any,
// map[string]any) and turns the tree into closures; an unknown function,
// a wrong number of arguments, a missing parameter or a misplaced aggregate
// is an error wrapping ErrCompile before any document is read. Prepare does
// both.
//
// A store decodes each document once with NewDoc when it is written and
// shares the Doc read-only across goroutines; Program.Execute runs over an
// iter.Seq[Doc] in the store's order and returns one JSON text per result
// (SELECT * returns the stored text unchanged). Without ORDER BY results
// keep document order and the scan stops as soon as TOP or LIMIT is met;
// ORDER BY with TOP or LIMIT (and no DISTINCT) keeps at most offset+limit
// rows in a heap. The context is checked every 256 documents. Execute
// writes each result's JSON directly (object and array constructors append
// their brackets and pre-quoted property names; only the values they hold
// are encoded), so a result costs no Go map or slice, and rows share a few
// memory chunks; the bytes are those of encoding the result's value.
// Program.MaxResults reports what TOP or LIMIT bounds the results to.
//
// Semantics follow Cosmos DB's documentation: undefined is distinct from
// null and never an error; comparing values of different types yields
// undefined, so the row is filtered out; logic is three-valued; numbers
// compare by value whatever their JSON spelling; ORDER BY orders undefined,
// null, booleans, numbers, strings, arrays, objects (ascending) and keeps
// rows whose sort value is undefined; aggregates skip undefined, COUNT over
// no rows is 0, SUM or AVG meeting a non-number is undefined, MIN and MAX
// order null < booleans < numbers < strings; GROUP BY results come in
// ascending order of their group values.
//
// # Fan-out (the router)
//
// PlanFanOut plans a query for many collections. The Plan holds the SQL
// every collection runs with the same parameters (Plan.Query: ORDER BY rows
// become {"k": [{"v": key}...], "p": payload}, TOP/OFFSET/LIMIT widen to
// offset+limit, AVG becomes SUM and COUNT, GROUP BY returns partial
// aggregates per group as {"g": keys, "a": partials}, DISTINCT applies per
// collection and again on the client) and how the client merges what the
// collections return (Plan.Kind, SingleCollection, Distinct, Offset, Limit):
//
//   - Stream: the collections' results, concatenated in collection order.
//   - OrderBy: a k-way merge of the collections' sorted rows, holding one
//     row per collection, ordered by Plan.CompareRows on their sort keys
//     (ties broken by collection index, so a merge resumed from the same
//     per-collection positions yields the same order); each row gives its
//     payload, and a row without one (undefined) is no result.
//   - Aggregate: every partial row is added to a Merger (Plan.NewMerger,
//     Merger.Add), which holds one accumulator set per group; Merger.Results
//     gives the groups.
//   - Nested: the rows merge by Plan.Inner (any kind, with its own DISTINCT,
//     OFFSET and LIMIT) into the FROM subquery's results, and Plan.Outer
//     runs the query over them.
//
// The client then applies DISTINCT (NewDistinctFilter, or queryhook.DistinctKey inside this module, for
// its own set), OFFSET and LIMIT, and writes each result with Plan.Encode.
// The router runs this merge as a stream, with continuation tokens and
// bounded buffering; the package's tests hold a reference merge built from
// the same pieces and check it against one collection holding every
// document. Shapes that cannot be merged exactly are an *UnmergeableError
// naming the construct (errors.Is ErrUnmergeable). A FROM subquery whose
// every result comes from one document runs on each collection like a
// path, and JOIN subqueries, which read one row, merge like any source; a
// FROM subquery that looks across documents (DISTINCT, TOP, OFFSET/LIMIT,
// an aggregate or GROUP BY in it) makes a Nested plan: the collections run
// the subquery's own plan (Plan.Inner), and the client merges its rows by
// that plan and runs the query over the results (Plan.Outer), holding
// them. Partial SUM and AVG
// values are added in another order than on one collection, so merged sums
// may differ in the last bits, as Cosmos DB's own cross-partition
// aggregates do.
//
// # What a query uses (the Cosmos DB backend)
//
// Analyze reads from the syntax tree what a query uses: aggregates and
// subqueries by clause (inside subqueries too), DISTINCT, TOP, OFFSET/LIMIT,
// ORDER BY, GROUP BY, JOIN, the form of FROM, parameters. Its
// Features.GatewayCrossPartition says whether the Cosmos DB gateway runs the
// query across partitions (filters and projections only), and
// Features.PushableWhere whether its WHERE alone selects the documents to
// read when the query is evaluated on the client.
//
// Values are Go JSON values (nil, bool, float64, string, []any,
// map[string]any) plus Undefined. Encoded results keep the property order
// the query names (SELECT c.title, c.id gives {"title":...,"id":...}, as
// Cosmos DB does); objects taken from documents are written with sorted
// keys; Plan.Encode writes merged results the same way.
//
// Why not cosmium's executor: v0.1.20 answers ordinary queries wrongly
// (integer literals never compare to document numbers, COUNT over no rows
// returns nothing, ARRAY_CONTAINS panics, single-quoted strings change the
// query; see TestCosmiumV0120Regressions). This engine is checked against
// Cosmos DB's documented examples (testdata/conformance), against itself
// fanned out over random splits (TestDifferentialFanOut), and runs the same
// filter about three times faster than cosmium (BenchmarkFilter).
package query
