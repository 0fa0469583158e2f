package main

import (
	"os"
	"testing"

	"github.com/abacusdb/abacus/internal/servertest"
)

// TestMain removes the abacus binary that the tests of serve build and
// start as a process of its own.
func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }
