// The client routes: path, page module, title and sidebar group.
import { DashboardPage } from '../pages/dashboard.js';
import { OperationsPage } from '../pages/operations.js';
import { QueuesPage } from '../pages/queues.js';
import { QueueDetailPage } from '../pages/queue-detail.js';
import { ConsumersPage } from '../pages/consumers.js';
import { MessagesPage } from '../pages/messages.js';
import { TracesPage } from '../pages/traces.js';
import { AnalyticsPage } from '../pages/analytics.js';
import { DLQPage } from '../pages/dlq.js';
import { SystemPage } from '../pages/system.js';

export const routes = [
  { path: '/', id: 'dashboard', title: 'Dashboard', group: 'Overview', page: DashboardPage },
  { path: '/operations', id: 'operations', title: 'Queue Operations', group: 'Overview', page: OperationsPage },
  { path: '/queues', id: 'queues', title: 'Queues', group: 'Routing', page: QueuesPage },
  { path: '/queues/:queueName', id: 'queue', title: 'Queue', parent: 'queues', page: QueueDetailPage },
  { path: '/consumers', id: 'consumers', title: 'Consumers', group: 'Routing', page: ConsumersPage },
  { path: '/messages', id: 'messages', title: 'Messages', group: 'Routing', page: MessagesPage },
  { path: '/traces', id: 'traces', title: 'Traces', group: 'Observability', page: TracesPage },
  { path: '/analytics', id: 'analytics', title: 'Analytics', group: 'Observability', page: AnalyticsPage },
  { path: '/dlq', id: 'dlq', title: 'Dead letter', group: 'Observability', page: DLQPage },
  { path: '/system', id: 'system', title: 'System', group: 'Infrastructure', page: SystemPage },
];

export const groups = ['Overview', 'Routing', 'Observability', 'Infrastructure'];
