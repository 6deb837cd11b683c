package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the page, its script, styles and icon, embedded: the
// dashboard works offline and needs no build step.
//
//go:embed assets
var assets embed.FS

// assetServer serves the embedded files under /assets/ (the page itself is
// a template, served by page).
func assetServer() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return http.FileServerFS(sub)
}
