package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// SecretKeys are the key fragments whose values are never written to the
// audit trail. A key matches when, lower-cased and with '-' read as '_', it
// contains one of them, so access_token, X-Api-Key and client_secret are
// caught too; over-redacting a harmless field costs less than a leaked
// credential.
var SecretKeys = []string{"token", "password", "passwd", "secret", "authorization", "api_key", "apikey", "cookie", "private_key", "credential"}

// Redacted replaces a secret value.
const Redacted = "[REDACTED]"

// MaxArguments is the largest argument document stored in a row; bigger ones
// are replaced by their size and sha256 so one huge call cannot bloat the
// trail.
const MaxArguments = 64 << 10

// RedactArguments returns args as they should be stored in a row: valid
// JSON, secrets redacted at any depth, size capped. Arguments without any
// secret-looking key are returned as is (no decode on the common path).
func RedactArguments(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if len(args) > MaxArguments {
		sum := sha256.Sum256(args)
		b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(args), "sha256": hex.EncodeToString(sum[:])})
		return b
	}
	if !json.Valid(args) {
		b, _ := json.Marshal(map[string]any{"invalid_json": string(args)})
		return b
	}
	if !mayHoldSecret(args) {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	b, err := json.Marshal(redact(v))
	if err != nil {
		return args
	}
	return b
}

// mayHoldSecret is a cheap pre-check on the raw bytes.
func mayHoldSecret(b []byte) bool {
	var small [512]byte
	low := append(small[:0], b...) // on the stack for the usual small document
	for i, c := range low {
		switch {
		case 'A' <= c && c <= 'Z':
			low[i] = c + ('a' - 'A')
		case c == '-':
			low[i] = '_'
		case c >= utf8.RuneSelf:
			// Unicode case folding (the Kelvin sign lowers to k) as IsSecretKey does it.
			low = bytes.ReplaceAll(bytes.ToLower(b), []byte("-"), []byte("_"))
			return containsSecretKey(low)
		}
	}
	return containsSecretKey(low)
}

func containsSecretKey(low []byte) bool {
	for _, k := range SecretKeys {
		if bytes.Contains(low, []byte(k)) {
			return true
		}
	}
	return false
}

// IsSecretKey reports whether values under key are redacted.
func IsSecretKey(key string) bool {
	k := strings.ReplaceAll(strings.ToLower(key), "-", "_")
	for _, s := range SecretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if IsSecretKey(k) {
				t[k] = Redacted
				continue
			}
			t[k] = redact(val)
		}
	case []any:
		for i, val := range t {
			t[i] = redact(val)
		}
	}
	return v
}
