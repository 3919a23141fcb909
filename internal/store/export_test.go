package store

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// PartitionClaim is Claim's messages alone, for the tests that need nothing else.
func (s *Store) PartitionClaim(ctx context.Context, req queue.PopRequest, leaseID string) ([]queue.Message, error) {
	c, err := s.Claim(ctx, req, leaseID)
	return c.Messages, err
}
