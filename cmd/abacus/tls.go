package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// listenerTLS is the TLS of serve's HTTP listener: its certificate and
// key, and, with clientCA, the CAs whose client certificates it requires.
// All empty: plain HTTP (nil).
func listenerTLS(cert, key, clientCA string) (*tls.Config, error) {
	switch {
	case cert == "" && key == "" && clientCA == "":
		return nil, nil
	case cert == "" || key == "":
		return nil, usagef("--http-tls-cert and --http-tls-key go together (--http-client-ca needs them too)")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, usagef("--http-tls-cert/--http-tls-key: %v", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pool, err := certPool(clientCA)
		if err != nil {
			return nil, usagef("--http-client-ca: %v", err)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// clientTLS is the TLS of the client commands: the CAs that sign the
// server's certificate (default: the system's) and a client certificate
// for a server that requires one. All empty: nil, the defaults.
func clientTLS(caFile, cert, key string) (*tls.Config, error) {
	if caFile == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := certPool(caFile)
		if err != nil {
			return nil, usagef("--ca-file: %v", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, usagef("--cert-file/--key-file: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "" || key != "":
		return nil, usagef("--cert-file and --key-file go together")
	}
	return cfg, nil
}

// certPool reads the PEM certificates of file.
func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}
