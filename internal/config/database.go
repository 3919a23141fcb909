package config

import "fmt"

// resolveDatabase sets PGDB, the database the connection string names: PG_DATABASE,
// the Queen 1.x brokers' name, when set, else the legacy PG_DB. Both set is a warning
// that names both values, even when they agree, so that the env file gets cleaned up.
// Each variable keeps its own value for the effective-configuration listing.
func (c *Config) resolveDatabase() {
	c.PGDB = c.pgDBLegacy
	if c.PGDatabase == "" {
		return
	}
	if c.sources["PG_DB"] != SourceDefault {
		c.warnings = append(c.warnings, fmt.Sprintf(
			"PG_DATABASE=%q and PG_DB=%q are both set; PG_DATABASE wins: the broker connects to database %q",
			c.PGDatabase, c.pgDBLegacy, c.PGDatabase))
	}
	c.PGDB = c.PGDatabase
}
