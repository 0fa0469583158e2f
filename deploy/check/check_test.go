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
// filled in.
func TestDashboardQueries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "grafana", "abacus-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n++
			if _, err := promql().ParseExpr(fill.Replace(tg.Expr)); err != nil {
				t.Errorf("panel %q: %q: %v", p.Title, tg.Expr, err)
			}
		}
	}
	if n < 10 {
		t.Fatalf("%d queries read; the dashboard has more", n)
	}
}
