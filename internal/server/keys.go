package server

import (
	"net/http"
	"net/url"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/apikey"
)

func keyJSON(k *apikey.Key) api.Key {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return api.Key{ID: k.ID, Name: k.Name, Scopes: scopes, RateLimit: k.RatePerSecond, Burst: k.Burst, CreatedAt: k.CreatedAt}
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	after, limit, err := pageParams(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	keys, err := s.cfg.Keys.List(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, next := page(keys, func(k *apikey.Key) string { return k.ID }, after, limit)
	writeJSON(w, http.StatusOK, api.KeyList{Keys: jsonEach(items, keyJSON), Next: next})
}

func decodeKeyCreate(data []byte) (api.CreateKeyRequest, error) {
	var req api.CreateKeyRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.CreateKeyRequest{}, err
	}
	return req, nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeKeyCreate)
	if !ok {
		return
	}
	token, key, err := s.cfg.Keys.Create(r.Context(), apikey.Spec{
		Name: req.Name, Scopes: req.Scopes, RatePerSecond: req.RateLimit, Burst: req.Burst,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/keys/"+url.PathEscape(key.ID))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.CreatedKey{Key: keyJSON(key), Token: token})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Keys.Revoke(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
