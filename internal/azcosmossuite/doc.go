// Package azcosmossuite runs Microsoft's own emulator tests of the Go SDK
// (the emulator*_test.go files of azcosmos v1.5.0, the version go.mod requires)
// against docshard serve, so that no change breaks what they check. It has
// no API: its one test, TestAzcosmosEmulatorSuite, copies the module from
// the module cache, points its tests at a docshard serve --self-signed it
// starts for each of them, and runs them one process each (see
// suite_test.go). The tests expected to pass are listed in
// testdata/passing.txt; those that do not pass yet, each with its reason,
// in testdata/pending.txt; those that cannot apply, in
// testdata/notapplicable.txt.
//
// It is a package of its own rather than a test of package emulator so
// that go test ./... runs it beside the emulator's own tests, and go test
// ./emulator stays quick.
package azcosmossuite
