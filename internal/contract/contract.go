package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// Endpoint is one route of a contract.
type Endpoint struct {
	ID       string          `json:"id"`
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response"`
	Status   int             `json:"status"`
}

// Contract is contracts/<name>.json.
type Contract struct {
	Name      string     `json:"name"`
	Version   string     `json:"version"`
	Endpoints []Endpoint `json:"endpoints"`
}

// NamePattern is what a contract name may look like.
var NamePattern = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Path returns the project-relative path of a named contract.
func Path(name string) string { return "contracts/" + name + ".json" }

// Parse decodes and checks a contract.
func Parse(data []byte) (*Contract, error) {
	var c Contract
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("contract is not valid JSON: %w", err)
	}
	if c.Name == "" {
		return nil, fmt.Errorf("contract has no name")
	}
	for i, e := range c.Endpoints {
		if e.ID == "" || e.Method == "" || e.Path == "" {
			return nil, fmt.Errorf("contract %s: endpoints[%d] needs id, method and path", c.Name, i)
		}
	}
	return &c, nil
}

// Canonical returns the canonical form of a JSON document: object keys
// sorted, no insignificant whitespace, numbers exactly as written, no HTML
// escaping.
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not valid JSON: trailing data after the document")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Hash returns the hex sha256 of the canonical form of data.
func Hash(data []byte) (string, error) {
	c, err := Canonical(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
