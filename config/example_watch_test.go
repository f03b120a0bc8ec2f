package config_test

import (
	"log"

	"github.com/docshard/docshard/config"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store/memstore"
)

// A router whose resolvers follow a configuration file: each change that
// loads is registered (atomically, per database); a broken edit is logged
// and the last good resolvers stay. A database the router follows by its
// shared state document (Client.Follow) keeps that state: it wins over the
// file.
func ExampleWatch() {
	st := memstore.New(nil)
	defer st.Close()
	c := router.New(st, nil)
	apply := func(cfg *config.Config) {
		for _, db := range cfg.Databases {
			if v, err := c.Version(db.Link); err == nil && v > 0 {
				continue // routed by its shared state
			}
			if err := c.Register(db.Link, db.Resolver); err != nil {
				log.Print(err)
			}
		}
	}
	cfg, w, err := config.Watch("app.yaml", config.WatchOptions{
		OnChange: apply,
		OnError:  func(err error) { log.Print(err) },
	})
	if err != nil {
		log.Print(err)
		return
	}
	defer w.Close()
	apply(cfg)
}
