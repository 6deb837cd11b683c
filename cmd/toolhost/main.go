package main

import (
	"os"

	"github.com/toolhost/toolhost/internal/cli"
)

func main() { os.Exit(cli.Main()) }
