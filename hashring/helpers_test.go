package hashring

import "fmt"

// links returns n collection links dbs/app/colls/{prefix}{i}.
func links(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("dbs/app/colls/%s%d", prefix, i)
	}
	return out
}
