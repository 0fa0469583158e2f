package lifecycle

import "github.com/abacusdb/abacus/internal/refreshcache"

// Cache keeps one View per namespace, each trusted for Refresh after its
// read started (package refreshcache). Refresh is what makes a cut known
// to every process before it takes effect: every cut is set more than
// Refresh in the future. Load builds the View with NewView, at readAt.
type Cache = refreshcache.Cache[View]
