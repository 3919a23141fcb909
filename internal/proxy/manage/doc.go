// Package manage is the one implementation of the operator's operations on the
// proxy database: tenants (create, list, show, update, suspend, resume, delete),
// API keys (create, list, rotate, revoke), users (create, list, delete, passwd),
// usage reports, cells (create, list, show, update, close, open, delete) and moves
// of tenants between cells (start, list, show, cancel). The admin API and the
// queen-proxy command line are two thin fronts over it, so a rule (an id's syntax,
// a default limit, the rotation grace, a usage span) is written once. Every
// refusal of input is a *tenant.ValidationError naming the field.
package manage
