package hashring_test

import (
	"fmt"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
)

// A ring over three collections, placing documents by their userId.
func ExampleNew() {
	r, err := hashring.New(
		[]string{"dbs/app/colls/users0", "dbs/app/colls/users1", "dbs/app/colls/users2"},
		&hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, _ := r.PartitionKey([]byte(`{"id":"1","userId":"alice"}`))
	link, _ := r.ResolveForCreate(key)
	fmt.Println(key, "->", link)
	data, _ := resolver.Marshal(r)
	fmt.Println(string(data))
	// Output:
	// alice -> dbs/app/colls/users1
	// {"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/users0","dbs/app/colls/users1","dbs/app/colls/users2"],"virtualNodes":16,"hash":"md5"}
}

// The ring a .NET DocumentDB SDK application used, read from its JSON form:
// keys land where the SDK put them (here, in a 64-bit process).
func Example_dotnet() {
	r, err := resolver.Unmarshal([]byte(`{"kind":"hash","hash":"dotnet-x64","virtualNodes":128,
		"collections":["dbs/T6t8AA==/colls/T6t8ALDFcwA=/","dbs/T6t8AA==/colls/T6t8ANdyZQE=/"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	link, _ := r.ResolveForCreate("CFR201601192F81OGO")
	fmt.Println(link)
	// Output: dbs/T6t8AA==/colls/T6t8ALDFcwA=/
}

// Exact balance and movement, without sampling keys: the share of the hash
// space each collection owns, and the share that changes hands when a
// collection is added (all of it going to the new collection).
func ExampleMoved() {
	links := []string{"dbs/app/colls/u0", "dbs/app/colls/u1", "dbs/app/colls/u2"}
	before, _ := hashring.New(links, &hashring.Options{VirtualNodes: 160})
	after, _ := hashring.New(append(links, "dbs/app/colls/u3"), &hashring.Options{VirtualNodes: 160})
	for i, s := range before.Ring().Shares() {
		fmt.Printf("%s %.3f\n", links[i], s)
	}
	moved, _ := hashring.Moved(before.Ring(), after.Ring())
	fmt.Printf("moved %.3f, new collection %.3f\n", moved, after.Ring().Shares()[3])
	// Output:
	// dbs/app/colls/u0 0.316
	// dbs/app/colls/u1 0.329
	// dbs/app/colls/u2 0.355
	// moved 0.264, new collection 0.264
}

// The bounded strategy caps the largest collection's share near loadFactor
// times the mean.
func ExampleOptions_bounded() {
	links := []string{"dbs/app/colls/u0", "dbs/app/colls/u1", "dbs/app/colls/u2", "dbs/app/colls/u3"}
	r, err := hashring.New(links, &hashring.Options{Strategy: hashring.StrategyBounded, LoadFactor: 1.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	largest := 0.0
	for _, s := range r.Ring().Shares() {
		largest = max(largest, s)
	}
	fmt.Printf("largest share %.3f (mean 0.250, cap %.3f)\n", largest, 0.25*1.1)
	data, _ := resolver.Marshal(r)
	fmt.Println(string(data))
	// Output:
	// largest share 0.275 (mean 0.250, cap 0.275)
	// {"kind":"hash","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2","dbs/app/colls/u3"],"virtualNodes":16,"hash":"md5","strategy":"bounded","loadFactor":1.1,"partitionCount":8191}
}
