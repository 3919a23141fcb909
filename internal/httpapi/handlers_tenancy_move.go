package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/tenantid"
)

// Limits of POST /internal/api/tenancy/export/messages.
const (
	exportDefaultLimit = 1000
	exportMaxLimit     = 5000
)

// tenantStateKeys are the keys of a tenant's state, in the order the store writes
// them (TestTenantStateKeysMatchTheStore ties them to the store's list).
var tenantStateKeys = []string{
	"queues", "partitions", "consumers", "lookup", "groups", "watermarks", "queueConsumers", "groupPolicies",
	"ready", "dlq", "traces", "traceNames", "kv", "timers", "timersDead", "streamQueries", "streamState", "streamShards",
}

// tenantStore is the broker, or a 503 when the server has none (no database).
func (s *Server) tenantStore() (*broker.Broker, error) {
	if s.broker == nil {
		return nil, &httpError{status: http.StatusServiceUnavailable, code: api.ErrorCodeUnavailable,
			msg: "tenant export and import are not available on this server"}
	}
	return s.broker, nil
}

// invalidField is a 400 naming field.
func invalidField(field, format string, args ...any) error {
	return queue.Invalid(field, format, args...)
}

// checkMoveTenant checks a tenant id given to these routes: a tenant id or a UUID,
// as the tenancy header takes them, never the global scope.
func checkMoveTenant(v string) (string, error) {
	t, ok := requestTenantID(v)
	if !ok || t == "" {
		return "", invalidField("tenant", "tenant must be one tenant id (%s) or a UUID", tenantid.Grammar)
	}
	return t, nil
}

// onlyKeys refuses a body with a key outside keys, naming the first such key: a
// misspelt key (a "since" that is not there) must not export or import the wrong rows.
// moveRequest reads the JSON object body of a tenant move route that allows only
// keys, and its tenant, after checking that the routes are served.
func (s *Server) moveRequest(r *http.Request, keys ...string) (*broker.Broker, object, string, error) {
	ts, err := s.tenantStore()
	if err != nil {
		return nil, nil, "", err
	}
	o, err := readObject(r, false)
	if err != nil {
		return nil, nil, "", err
	}
	if err := onlyKeys(o, keys...); err != nil {
		return nil, nil, "", err
	}
	tenant, err := moveTenant(o)
	if err != nil {
		return nil, nil, "", err
	}
	return ts, o, tenant, nil
}

func onlyKeys(o object, keys ...string) error {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if !slices.Contains(keys, k) {
			return invalidField(k, "%s is not a field of this request", k)
		}
	}
	return nil
}

// moveTenant reads the body's tenant.
func moveTenant(o object) (string, error) {
	v, p := o.str("tenant")
	if p != present {
		return "", invalidField("tenant", "tenant is required (a string)")
	}
	return checkMoveTenant(v)
}

// queryTenant reads the tenant query parameter.
func queryTenant(r *http.Request) (string, error) {
	v, ok := queryString(r.URL.Query(), "tenant")
	if !ok || v == "" {
		return "", invalidField("tenant", "tenant is required")
	}
	return checkMoveTenant(v)
}

// checkUUID refuses a value that is not a UUID, naming field.
func checkUUID(field, v string) error {
	if !queue.IsUUID(v) {
		return invalidField(field, "%s must be a UUID", field)
	}
	return nil
}

// checkTimestamp refuses a value that is not an RFC 3339 timestamp, naming field.
func checkTimestamp(field, v string) error {
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		return invalidField(field, "%s must be an RFC 3339 timestamp", field)
	}
	return nil
}

// exportKey is a message's place in the export order: the cursor of the export.
type exportKey struct {
	PartitionID string `json:"partitionId"`
	CreatedAt   string `json:"createdAt"`
	ID          string `json:"id"`
}

// readExportKey reads a cursor object at field: partitionId (when withPartition),
// createdAt and id.
func readExportKey(raw json.RawMessage, field string, withPartition bool) (exportKey, error) {
	o, p := asObject(raw)
	if p != present {
		return exportKey{}, invalidField(field, "%s must be an object", field)
	}
	var k exportKey
	var ok [3]presence
	k.PartitionID, ok[0] = o.str("partitionId")
	k.CreatedAt, ok[1] = o.str("createdAt")
	k.ID, ok[2] = o.str("id")
	switch {
	case withPartition && (ok[0] != present || checkUUID("x", k.PartitionID) != nil):
		return k, invalidField(field+".partitionId", "%s.partitionId must be a UUID", field)
	case ok[1] != present || checkTimestamp("x", k.CreatedAt) != nil:
		return k, invalidField(field+".createdAt", "%s.createdAt must be an RFC 3339 timestamp", field)
	case ok[2] != present || checkUUID("x", k.ID) != nil:
		return k, invalidField(field+".id", "%s.id must be a UUID", field)
	}
	return k, nil
}

// handleTenancyExportHeads is GET /internal/api/tenancy/export/heads?tenant=T: one
// object per partition of the tenant with its message count and last message.
func (s *Server) handleTenancyExportHeads(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.tenantStore()
	if err != nil {
		return err
	}
	tenant, err := queryTenant(r)
	if err != nil {
		return err
	}
	heads, err := ts.TenantExportHeads(r.Context(), tenant)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]json.RawMessage{"partitions": heads})
}

// handleTenancyExportMessages is POST /internal/api/tenancy/export/messages: a page
// of the tenant's messages in (partition_id, created_at, id) order, and the cursor of
// the next page (null after the last).
func (s *Server) handleTenancyExportMessages(w http.ResponseWriter, r *http.Request) error {
	ts, o, tenant, err := s.moveRequest(r, "tenant", "since", "after", "limit")
	if err != nil {
		return err
	}
	limit := int64(exportDefaultLimit)
	if o.raw("limit") != nil {
		var p presence
		if limit, p = o.integer("limit", 1, exportMaxLimit); p != present {
			return invalidField("limit", "limit must be an integer from 1 to %d", exportMaxLimit)
		}
	}
	since, err := readSince(o.raw("since"))
	if err != nil {
		return err
	}
	var after exportKey
	if raw := o.raw("after"); raw != nil {
		if after, err = readExportKey(raw, "after", true); err != nil {
			return err
		}
	}
	rows, err := ts.TenantExportMessages(r.Context(), tenant, since, after.PartitionID, after.CreatedAt, after.ID, int(limit))
	if err != nil {
		return err
	}
	out := struct {
		Messages []json.RawMessage `json:"messages"`
		Next     *exportKey        `json:"next"`
	}{Messages: rows}
	if out.Messages == nil {
		out.Messages = []json.RawMessage{}
	}
	if len(rows) == int(limit) {
		var last struct {
			PartitionID string `json:"partition_id"`
			CreatedAt   string `json:"created_at"`
			ID          string `json:"id"`
		}
		if err := json.Unmarshal(rows[len(rows)-1], &last); err != nil {
			return fmt.Errorf("read the last exported row: %w", err)
		}
		out.Next = &exportKey{PartitionID: last.PartitionID, CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return writeJSON(w, http.StatusOK, out)
}

// readSince checks the since object: partition id → {"createdAt","id"}.
func readSince(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	o, p := asObject(raw)
	if p != present {
		return nil, invalidField("since", "since must be an object of partition ids")
	}
	for _, pid := range slices.Sorted(maps.Keys(o)) {
		if checkUUID("since", pid) != nil {
			return nil, invalidField("since", "since must be keyed by partition ids (UUIDs)")
		}
		if _, err := readExportKey(o[pid], "since."+pid, false); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// handleTenancyExportIDs is POST /internal/api/tenancy/export/ids
// {"tenant","partitionId"}: every message id of that partition of the tenant.
func (s *Server) handleTenancyExportIDs(w http.ResponseWriter, r *http.Request) error {
	ts, o, tenant, err := s.moveRequest(r, "tenant", "partitionId")
	if err != nil {
		return err
	}
	pid, _ := o.str("partitionId")
	if err := checkUUID("partitionId", pid); err != nil {
		return err
	}
	ids, err := ts.TenantExportIDs(r.Context(), tenant, pid)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	return writeJSON(w, http.StatusOK, map[string][]string{"ids": ids})
}

// handleTenancyExportState is GET /internal/api/tenancy/export/state?tenant=T: every
// row of the tenant but its messages, by table.
func (s *Server) handleTenancyExportState(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.tenantStore()
	if err != nil {
		return err
	}
	tenant, err := queryTenant(r)
	if err != nil {
		return err
	}
	state, err := ts.TenantExportState(r.Context(), tenant)
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, state)
	return nil
}

// handleTenancyImportState is POST /internal/api/tenancy/import/state
// {"tenant","mode", <state keys>…}: mode structure upserts the queues and partitions;
// mode all makes every state table's rows of the tenant equal to the given ones.
func (s *Server) handleTenancyImportState(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.tenantStore()
	if err != nil {
		return err
	}
	o, err := readObject(r, false)
	if err != nil {
		return err
	}
	tenant, err := moveTenant(o)
	if err != nil {
		return err
	}
	mode, _ := o.str("mode")
	if mode != "structure" && mode != "all" {
		return invalidField("mode", `mode must be "structure" or "all"`)
	}
	state := make(map[string]json.RawMessage, len(tenantStateKeys))
	for key, raw := range o {
		switch {
		case key == "tenant" || key == "mode":
		case !slices.Contains(tenantStateKeys, key):
			return invalidField(key, "%s is not a key of a tenant's state", key)
		case !isNull(raw) && raw[0] != '[':
			return invalidField(key, "%s must be an array of rows", key)
		default:
			state[key] = raw
		}
	}
	if err := ts.TenantImportState(r.Context(), tenant, mode, state); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tenant": tenant, "mode": mode})
}

// handleTenancyImportMessages is POST /internal/api/tenancy/import/messages
// {"tenant","messages":[row…]}: inserts the rows, skipping existing ids.
func (s *Server) handleTenancyImportMessages(w http.ResponseWriter, r *http.Request) error {
	ts, o, tenant, err := s.moveRequest(r, "tenant", "messages")
	if err != nil {
		return err
	}
	rows := o.raw("messages")
	if rows == nil || rows[0] != '[' {
		return invalidField("messages", "messages must be an array of rows")
	}
	n, err := ts.TenantImportMessages(r.Context(), tenant, rows)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]int64{"imported": n})
}

// handleTenancyImportPrune is POST /internal/api/tenancy/import/prune
// {"tenant","partitionId","keep":[ids]}: deletes the partition's other messages.
func (s *Server) handleTenancyImportPrune(w http.ResponseWriter, r *http.Request) error {
	ts, o, tenant, err := s.moveRequest(r, "tenant", "partitionId", "keep")
	if err != nil {
		return err
	}
	pid, _ := o.str("partitionId")
	if err := checkUUID("partitionId", pid); err != nil {
		return err
	}
	var keep []string
	if raw := o.raw("keep"); raw == nil || json.Unmarshal(raw, &keep) != nil {
		return invalidField("keep", "keep must be an array of message ids")
	}
	for i, id := range keep {
		if err := checkUUID(fmt.Sprintf("keep[%d]", i), id); err != nil {
			return err
		}
	}
	n, err := ts.TenantImportPrune(r.Context(), tenant, pid, keep)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]int64{"deleted": n})
}

// handleTenancyDrop is POST /internal/api/tenancy/drop {"tenant"}: deletes every row
// of the tenant in this cell but its fence, and counts them: "<key>Deleted" for each
// state key, messagesDeleted and analyticsDeleted.
func (s *Server) handleTenancyDrop(w http.ResponseWriter, r *http.Request) error {
	ts, _, tenant, err := s.moveRequest(r, "tenant")
	if err != nil {
		return err
	}
	counts, err := ts.TenantDrop(r.Context(), tenant)
	if err != nil {
		return err
	}
	out := make(map[string]int64, len(counts))
	for k, n := range counts {
		out[k+"Deleted"] = n
	}
	return writeJSON(w, http.StatusOK, out)
}
