import Foundation

/// A location in the database (`FIRDatabaseReference`): reads through the query API it
/// inherits, writes, onDisconnect operations and transactions.
public final class DatabaseReference: DatabaseQuery, @unchecked Sendable, CustomStringConvertible {
    init(database: Database, path: [String]) {
        super.init(database: database, path: path, params: DatabaseQueryParams())
    }

    /// The last key of the location; nil at the root.
    public var key: String? { path.last }

    public var parent: DatabaseReference? { path.isEmpty ? nil : DatabaseReference(database: database, path: Array(path.dropLast())) }

    public var root: DatabaseReference { DatabaseReference(database: database, path: []) }

    /// The location's URL: the database URL and the path.
    public var url: String {
        let base = database.url.split(separator: "?", maxSplits: 1)
        let encoded = path.map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? $0 }.joined(separator: "/")
        let query = base.count > 1 ? "?" + base[1] : ""
        return String(base[0]).trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/" + encoded + query
    }

    public var description: String { url }

    /// A location below this one; `pathString` may hold several keys (`"a/b"`).
    public func child(_ pathString: String) -> DatabaseReference {
        DatabaseReference(database: database, path: path + DatabaseValues.segments(pathString))
    }

    /// A new child with a Firebase push id: 20 characters, ordered by creation time.
    public func childByAutoId() -> DatabaseReference { child(PushID.make()) }

    // MARK: Writes

    /// Sends a write now (queued in call order while offline); the caller awaits its answer.
    /// Sets (`p`) and updates (`m`) go through the write tree, so observers see them at once;
    /// onDisconnect operations change nothing until the server runs them.
    func submit(_ action: String, _ json: Result<DatabaseJSON, DatabaseError>) -> Result<DatabaseRepo.ReplyBox, DatabaseError> {
        json.map { data in
            if action == "p" || action == "m" { return database.repo.write(action, path: path, data: data) }
            return database.repo.submit(action, .object([("p", DatabaseRepo.wirePath(path)), ("d", data)]))
        }
    }

    /// The Apple SDK's error for a write's answer.
    static func outcome(_ submitted: Result<DatabaseRepo.ReplyBox, DatabaseError>) async throws {
        switch submitted {
        case .failure(let error): throw error.nsError
        case .success(let box):
            let reply = await box.value()
            guard reply.status == "ok" else { throw DatabaseError.server(status: reply.status, message: reply.data.stringValue).nsError }
        }
    }

    func write(_ action: String, _ json: Result<DatabaseJSON, DatabaseError>) async throws {
        try await Self.outcome(submit(action, json))
    }

    /// Sends a write at once and calls `block` with its outcome on the callback queue, in the
    /// order the answers arrive.
    func complete(_ block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?, _ action: String, _ json: Result<DatabaseJSON, DatabaseError>) {
        let queue = database.callbackQueue
        switch submit(action, json) {
        case .failure(let error): queue.async { block?(error.nsError, self) }
        case .success(let box):
            box.whenResolved { reply in
                let error = reply.status == "ok" ? nil : DatabaseError.server(status: reply.status, message: reply.data.stringValue).nsError
                queue.async { block?(error, self) }
            }
        }
    }

    static func withPriority(_ value: Any?, _ priority: Any?) throws(DatabaseError) -> DatabaseJSON {
        let json = try DatabaseValues.json(value)
        guard let priority = try DatabaseValues.leaf(priority) else { return json }
        if case .object(var members) = json {
            members.removeAll { $0.0 == ".priority" }
            return .object(members + [(".priority", priority.json)])
        }
        return .object([(".value", json), (".priority", priority.json)])
    }

    static func merge(_ values: [AnyHashable: Any]) throws(DatabaseError) -> DatabaseJSON {
        var members: [(String, DatabaseJSON)] = []
        for (key, value) in values {
            guard let key = key.base as? String, !DatabaseValues.segments(key).isEmpty else {
                throw .invalidValue("updateChildValues: keys must be non-empty child paths.")
            }
            members.append((DatabaseValues.segments(key).joined(separator: "/"), try DatabaseValues.json(value)))
        }
        return .object(members.sorted { $0.0 < $1.0 })
    }

    /// Replaces the data here (nil deletes).
    public func setValue(_ value: Any?) { setValue(value, withCompletionBlock: nil) }

    public func setValue(_ value: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let json = Result { () throws(DatabaseError) in try DatabaseValues.json(value) }
        complete(block, "p", json)
    }

    @discardableResult
    public func setValue(_ value: Any?) async throws -> DatabaseReference {
        let json = Result { () throws(DatabaseError) in try DatabaseValues.json(value) }
        try await write("p", json)
        return self
    }

    public func setValue(_ value: Any?, andPriority priority: Any?) { setValue(value, andPriority: priority, withCompletionBlock: nil) }

    public func setValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        let json = Result { () throws(DatabaseError) in try Self.withPriority(value, priority) }
        complete(block, "p", json)
    }

    @discardableResult
    public func setValue(_ value: Any?, andPriority priority: Any?) async throws -> DatabaseReference {
        let json = Result { () throws(DatabaseError) in try Self.withPriority(value, priority) }
        try await write("p", json)
        return self
    }

    /// Sets only the priority (a write to `<path>/.priority`).
    public func setPriority(_ priority: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)? = nil) {
        let json = Result { () throws(DatabaseError) in try DatabaseValues.leaf(priority)?.json ?? .null }
        let target = DatabaseReference(database: database, path: path + [".priority"])
        target.complete(block, "p", json)
    }

    /// Writes several children (paths relative to here, `"a/b"` allowed; nil deletes) in one update.
    public func updateChildValues(_ values: [AnyHashable: Any]) { updateChildValues(values, withCompletionBlock: nil) }

    public func updateChildValues(_ values: [AnyHashable: Any], withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let json = Result { () throws(DatabaseError) in try Self.merge(values) }
        complete(block, "m", json)
    }

    @discardableResult
    public func updateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        let json = Result { () throws(DatabaseError) in try Self.merge(values) }
        try await write("m", json)
        return self
    }

    public func removeValue() { removeValue(completionBlock: nil) }

    public func removeValue(completionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        complete(block, "p", .success(.null))
    }

    @discardableResult
    public func removeValue() async throws -> DatabaseReference {
        try await write("p", .success(.null))
        return self
    }

    /// Encodes `value` with `Database.Encoder` and sets it (throws at once when it cannot be encoded).
    public func setValue<T: Encodable>(
        from value: T, encoder: Database.Encoder = Database.Encoder(), completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) throws {
        let json = try encoder.encodeJSON(value)
        var block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
        if let completion { block = { error, _ in completion(error) } }
        complete(block, "p", .success(json))
    }

    // MARK: onDisconnect

    public func onDisconnectSetValue(_ value: Any?) { onDisconnectSetValue(value, withCompletionBlock: nil) }

    public func onDisconnectSetValue(_ value: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let json = Result { () throws(DatabaseError) in try DatabaseValues.json(value) }
        complete(block, "o", json)
    }

    @discardableResult
    public func onDisconnectSetValue(_ value: Any?) async throws -> DatabaseReference {
        let json = Result { () throws(DatabaseError) in try DatabaseValues.json(value) }
        try await write("o", json)
        return self
    }

    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) {
        let json = Result { () throws(DatabaseError) in try Self.withPriority(value, priority) }
        complete(nil, "o", json)
    }

    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) { onDisconnectUpdateChildValues(values, withCompletionBlock: nil) }

    public func onDisconnectUpdateChildValues(
        _ values: [AnyHashable: Any], withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        let json = Result { () throws(DatabaseError) in try Self.merge(values) }
        complete(block, "om", json)
    }

    @discardableResult
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        let json = Result { () throws(DatabaseError) in try Self.merge(values) }
        try await write("om", json)
        return self
    }

    public func onDisconnectRemoveValue() { onDisconnectRemoveValue(withCompletionBlock: nil) }

    public func onDisconnectRemoveValue(withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        complete(block, "o", .success(.null))
    }

    @discardableResult
    public func onDisconnectRemoveValue() async throws -> DatabaseReference {
        try await write("o", .success(.null))
        return self
    }

    public func cancelDisconnectOperations() { cancelDisconnectOperations(withCompletionBlock: nil) }

    public func cancelDisconnectOperations(withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        complete(block, "oc", .success(.null))
    }

    @discardableResult
    public func cancelDisconnectOperations() async throws -> DatabaseReference {
        try await write("oc", .success(.null))
        return self
    }

    // MARK: Transactions

    /// Runs `block` on the current value and writes its result if nobody wrote meanwhile, else
    /// runs it again on the newer value (at most 25 times).
    public func runTransactionBlock(_ block: @escaping @Sendable (MutableData) -> TransactionResult) {
        runTransactionBlock(block, andCompletionBlock: nil)
    }

    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?
    ) {
        runTransactionBlock(block, andCompletionBlock: completionBlock, withLocalEvents: true)
    }

    /// `withLocalEvents` (the Apple SDK's `applyLocally`): true shows each run's result to
    /// observers at once (reverted if the run loses or fails); false shows only what the server
    /// confirms.
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?,
        withLocalEvents localEvents: Bool
    ) {
        let queue = database.callbackQueue
        Task {
            do {
                let (committed, snapshot) = try await transaction(block, applyLocally: localEvents)
                queue.async { completionBlock?(nil, committed, snapshot) }
            } catch {
                queue.async { completionBlock?(error, false, nil) }
            }
        }
    }

    /// The async form: whether it committed, and the data after it (results shown locally at once).
    @discardableResult
    public func runTransactionBlock(_ block: @escaping @Sendable (MutableData) -> TransactionResult) async throws -> (Bool, DataSnapshot) {
        try await transaction(block, applyLocally: true)
    }

    func transaction(_ block: @escaping @Sendable (MutableData) -> TransactionResult, applyLocally: Bool) async throws -> (Bool, DataSnapshot) {
        let result = await database.repo.runTransaction(path: path, applyLocally: applyLocally) { current in
            block(MutableData(node: current)).node
        }
        switch result {
        case .success(let outcome): return (outcome.committed, DataSnapshot(node: outcome.node, ref: self))
        case .failure(let error): throw error.nsError
        }
    }
}
