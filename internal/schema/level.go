package schema

// Level numbers the broker's schema: it rises by one with every change of the embedded
// SQL, and is recorded beside the version at every apply. A broker that applies no DDL
// (QUEEN_APPLY_SCHEMA=0) serves a database whose highest recorded level is at least
// Level: schema changes only add, so a newer schema serves an older broker, and the
// version alone (a hash) cannot say which of two is newer.
//
// After changing any file under sql/, raise Level by one and set levelVersion to the
// new Version(); TestLevelNumbersTheSQL fails until both are done.
const Level = 41

// levelVersion is the Version() that Level numbers.
const levelVersion = "dc9cff0778c93931"
