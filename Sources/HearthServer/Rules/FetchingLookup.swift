import HearthCore
import HearthRules

/// `get()`/`exists()` for the synchronous rules evaluator over documents read asynchronously.
///
/// The evaluator runs over the documents fetched so far; a lookup of one not fetched yet is
/// noted and fails. ``settle(_:fetch:)`` then fetches the noted documents and runs the
/// evaluation again, until one run needs nothing it did not have. An evaluation is
/// deterministic given its documents, so the last run decides exactly as a lookup reading
/// storage in place would have — without holding a database snapshot or lock across the
/// reads. Each run adds a document, so a rule that reads k documents runs at most k + 1 times
/// (bounded by ``maxRounds``; past it, lookups still missing fail, which never allows more).
final class FetchingLookup: RulesDocumentLookup {
    struct Key: Hashable {
        var database: String
        var path: ResourcePath
        var afterWrites: Bool
    }

    /// A fetch that failed: the lookup fails with it, as a failed storage read does.
    struct FetchFailed: Error, CustomStringConvertible {
        var description: String
    }

    struct NotFetched: Error, CustomStringConvertible {
        var description: String { "not read yet" }
    }

    static let maxRounds = 24

    private var fetched: [Key: Result<[String: Value]?, FetchFailed>] = [:]
    private var wanted: [Key] = []

    func document(database: String, path: ResourcePath, afterWrites: Bool) throws -> [String: Value]? {
        guard path.isDocument else { return nil }
        let key = Key(database: database, path: path, afterWrites: afterWrites)
        if let known = fetched[key] { return try known.get() }
        if !wanted.contains(key) { wanted.append(key) }
        throw NotFetched()
    }

    /// Runs `evaluate` until it needs no document that was not fetched; `fetch` reads one.
    func settle<T>(
        _ evaluate: (FetchingLookup) throws(HearthError) -> T, fetch: (Key) async throws -> [String: Value]?
    ) async throws(HearthError) -> T {
        var round = 0
        while true {
            wanted = []
            let result = try evaluate(self)
            round += 1
            if wanted.isEmpty || round >= Self.maxRounds { return result }
            for key in wanted {
                do {
                    fetched[key] = .success(try await fetch(key))
                } catch {
                    fetched[key] = .failure(FetchFailed(description: "\(error)"))
                }
            }
        }
    }
}
