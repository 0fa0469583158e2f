package server

import (
	"net/http"

	"github.com/abacusdb/abacus/api"
)

// Deletes answer 202 Accepted: they take effect at effective_at, a moment
// ahead, once every server has learned of them (docs/api.md, "Deleting").

func (s *Server) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	at, err := s.client.DeleteNamespace(r.Context(), ns)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.DeleteResponse{Namespace: ns, EffectiveAt: at})
}

func (s *Server) deleteCounter(w http.ResponseWriter, r *http.Request) {
	ns, counter := r.PathValue("ns"), r.PathValue("counter")
	at, err := s.client.DeleteCounter(r.Context(), ns, counter)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.DeleteResponse{Namespace: nsOrDefault(ns), Counter: counter, EffectiveAt: at})
}

func (s *Server) deleteLedger(w http.ResponseWriter, r *http.Request) {
	ns, ledger := r.PathValue("ns"), r.PathValue("ledger")
	at, err := s.client.DeleteLedger(r.Context(), ns, ledger)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.DeleteResponse{Namespace: ns, Ledger: ledger, EffectiveAt: at})
}
