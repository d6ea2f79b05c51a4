public import HearthCore

/// The Realtime Database as the lifecycle worker sees it: find a node's children by a
/// condition on one of their fields, and delete paths through the database's single write
/// path. `hearth serve` implements it over its `DatabaseEngine` (admin access, the default
/// namespace); HearthFiles itself knows nothing of the database.
public protocol LifecycleDatabase: Sendable {
    /// Keys of `parent`'s children whose `field` (a `/`-separated child path) meets `op value`,
    /// in key order, at most `limit`. `<` and `<=` compare numbers (or strings with strings),
    /// `==` any scalar.
    func children(of parent: [String], where field: [String], _ op: LifecycleRules.Condition.Operator, _ value: JSON, limit: Int) async throws
        -> [String]
    /// Of the given paths (keys from the root), those that hold data.
    func existing(_ paths: [[String]]) async throws -> [[String]]
    /// Deletes the paths in one atomic write (a multi-path update of nulls); paths already
    /// empty are fine.
    func delete(_ paths: [[String]]) async throws
}
