package check

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func promql() parser.Parser { return parser.NewParser(parser.Options{}) }

// The alert rules parse and validate as promtool check rules would.
func TestAlertRules(t *testing.T) {
	path := filepath.Join("..", "prometheus", "abacus-alerts.yaml")
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Error(err)
	}
	if groups == nil || len(groups.Groups) == 0 || len(groups.Groups[0].Rules) < 5 {
		t.Fatalf("%s: parsed %+v; the file has more rules", path, groups)
	}
}

// Every query of the dashboard is PromQL once Grafana's variables are
// filled in. Queries are found wherever they sit in the JSON (panels,
// rows, templating), by their key.
func TestDashboardQueries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "grafana", "abacus-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				exprs = append(exprs, e)
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(doc)
	fill := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")
	for _, e := range exprs {
		if _, err := promql().ParseExpr(fill.Replace(e)); err != nil {
			t.Errorf("%q: %v", e, err)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%d queries found; the dashboard has more", len(exprs))
	}
}
