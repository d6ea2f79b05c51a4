public import Foundation
import HearthFirestoreProto
import SwiftProtobuf
import Synchronization

#if !canImport(ObjectiveC)
/// Foundation's `NSErrorPointer` (an `AutoreleasingUnsafeMutablePointer` on Apple platforms),
/// which swift-corelibs-foundation lacks: the transaction block's error out-parameter
/// (`errorPointer?.pointee = error`).
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?
#endif

/// Options for `runTransaction(with:block:completion:)`.
public final class TransactionOptions: @unchecked Sendable {
    /// How many times the block may run before the transaction fails (default 5; at least 1).
    /// An invalid value is a programming error, as in the Apple SDK (which raises an exception).
    public var maxAttempts: Int {
        didSet { precondition(maxAttempts > 0 && maxAttempts <= Int(Int32.max), "Invalid maxAttempts: \(maxAttempts)") }
    }

    public init() { maxAttempts = 5 }

    public convenience init(maxAttempts: Int) {
        self.init()
        self.maxAttempts = maxAttempts
    }
}

/// The reads and writes of one attempt of `runTransaction`, as the Apple SDK makes them:
/// optimistic, with no server transaction. Reads are `BatchGetDocuments` outside any
/// transaction; the commit carries a precondition for every document read (its update time, or
/// "does not exist"), and a `verify` write for a document read but not written, so the commit
/// fails if anything read changed since — and the attempt is retried.
public final class Transaction: @unchecked Sendable {
    let firestore: Firestore
    let state = Mutex(TransactionState())

    init(firestore: Firestore) { self.firestore = firestore }

    /// Reads a document on the server (blocking the transaction's block until it arrives). Every
    /// read must come before the first write.
    public func getDocument(_ document: DocumentReference) throws -> DocumentSnapshot {
        try check(document)
        try state.withLock { try $0.checkCanRead() }
        let name = firestore.documentName(document.path)
        let found = try Self.waitFor { [firestore] in try await firestore.lookup(name) }
        try state.withLock { try $0.recordRead(name, updateTime: found?.updateTime) }
        return DocumentSnapshot(reference: document, document: found)
    }

    /// Runs `body` on the cooperative pool and blocks this (non-pool) thread until it ends. The
    /// transaction block runs on a dispatch queue of its own (`runTransaction`), never in a task,
    /// so waiting here cannot starve the pool that runs `body`; the task ends before this returns.
    static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let box = WaitBox<T>()
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            box.result.withLock { $0 = outcome }
            box.done.signal()
        }
        box.done.wait()
        guard let outcome = box.result.withLock({ $0 }) else { preconditionFailure("signalled without a result") }
        return try outcome.get()
    }

    final class WaitBox<T: Sendable>: @unchecked Sendable {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
    }

    func check(_ document: DocumentReference) throws {
        guard document.firestore == nil || document.firestore === firestore else {
            throw FirestoreErrorCode.invalidArgument.error("Provided document reference is from a different Firestore instance.")
        }
    }

    /// Records a write, or the error that will fail the commit (the Apple SDK raises an exception
    /// for invalid data; these calls do not throw, as there).
    func write(_ document: DocumentReference, _ make: (inout TransactionState, String) throws -> Void) {
        let name = firestore.documentName(document.path)
        state.withLock { s in
            do {
                try check(document)
                try make(&s, name)
            } catch {
                if s.writeError == nil { s.writeError = error as NSError }
            }
        }
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference) -> Transaction {
        write(document) { s, name in s.set(name, try firestore.reader.parseSet(data).write(name: name)) }
        return self
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, merge: Bool) -> Transaction {
        guard merge else { return setData(data, forDocument: document) }
        write(document) { s, name in s.set(name, try firestore.reader.parseMergeSet(data).write(name: name)) }
        return self
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, mergeFields: [Any]) -> Transaction {
        write(document) { s, name in
            let fields = try mergeFields.map { f -> FieldPath in
                if let p = f as? FieldPath { return p }
                if let s = f as? String { return try FieldPath.parse(dotted: s) }
                throw FirestoreErrorCode.invalidArgument.error("Merge fields must be Strings or FieldPaths.")
            }
            s.set(name, try firestore.reader.parseMergeSet(data, mergeFields: fields).write(name: name))
        }
        return self
    }

    @discardableResult
    public func updateData(_ fields: [AnyHashable: Any], forDocument document: DocumentReference) -> Transaction {
        write(document) { s, name in try s.update(name, try firestore.reader.parseUpdate(fields).write(name: name)) }
        return self
    }

    @discardableResult
    public func deleteDocument(_ document: DocumentReference) -> Transaction {
        write(document) { s, name in
            var w = Google_Firestore_V1_Write()
            w.delete = name
            s.set(name, w)
        }
        return self
    }

    /// Encodes `value` and writes it (throws if it does not encode).
    @discardableResult
    public func setData<T: Encodable>(
        from value: T, forDocument document: DocumentReference, merge: Bool = false, encoder: Firestore.Encoder = Firestore.Encoder()
    ) throws -> Transaction {
        setData(try encoder.encode(value), forDocument: document, merge: merge)
    }
}

/// One attempt's reads and writes, and the preconditions they imply (pure; unit-tested).
struct TransactionState {
    /// Document name → update time when read (nil: read as missing).
    var readVersions: [String: Google_Protobuf_Timestamp?] = [:]
    var writes: [Google_Firestore_V1_Write] = []
    var written: Set<String> = []
    /// The first invalid write; the commit fails with it.
    var writeError: NSError?

    func checkCanRead() throws {
        guard writes.isEmpty else {
            throw FirestoreErrorCode.invalidArgument.error("Firestore transactions require all reads to be executed before all writes")
        }
    }

    mutating func recordRead(_ name: String, updateTime: Google_Protobuf_Timestamp?) throws {
        if let existing = readVersions[name] {
            guard existing == updateTime else {
                throw FirestoreErrorCode.aborted.error("Document version changed between two reads.")
            }
        } else {
            readVersions[name] = .some(updateTime)
        }
    }

    /// For sets, deletes and verifies: the read version, if this is the first write of a read document.
    func precondition(_ name: String) -> Google_Firestore_V1_Precondition? {
        guard !written.contains(name), let version = readVersions[name] else { return nil }
        var p = Google_Firestore_V1_Precondition()
        if let version { p.updateTime = version } else { p.exists = false }
        return p
    }

    mutating func set(_ name: String, _ write: Google_Firestore_V1_Write) {
        var w = write
        if let p = precondition(name) { w.currentDocument = p } else { w.clearCurrentDocument() }
        writes.append(w)
        written.insert(name)
    }

    /// Updates need the document: its read version, or (not read) that it exists; a document read
    /// as missing cannot be updated.
    mutating func update(_ name: String, _ write: Google_Firestore_V1_Write) throws {
        defer { written.insert(name) }
        var w = write
        if !written.contains(name), let version = readVersions[name] {
            guard let version else {
                throw FirestoreErrorCode.invalidArgument.error("Can't update a document that doesn't exist.")
            }
            w.currentDocument.updateTime = version
        } else {
            w.currentDocument.exists = true
        }
        writes.append(w)
    }

    /// The commit's writes: every write, then a `verify` for each document read and not written.
    func commitWrites() throws -> [Google_Firestore_V1_Write] {
        if let writeError { throw writeError }
        var out = writes
        for name in readVersions.keys.sorted() where !written.contains(name) {
            var verify = Google_Firestore_V1_Write()
            verify.verify = name
            if let p = precondition(name) { verify.currentDocument = p }
            out.append(verify)
        }
        return out
    }
}

/// When to run the transaction block again (pure; unit-tested): up to `maxAttempts` runs; a
/// retry on ABORTED, ALREADY_EXISTS, FAILED_PRECONDITION or a transient code (not for errors
/// the app's block set outside `FirestoreErrorDomain`), after an exponential backoff: none before
/// the first run, then 1 s × 1.5 per retry (at most 60 s), each ±50% jitter — the Apple SDK's
/// `TransactionRunner` with `ExponentialBackoff`.
struct TransactionRetryPolicy {
    var attemptsRemaining: Int
    var base: Double = 0
    static let initialDelay = 1.0, factor = 1.5, maxDelay = 60.0

    init(maxAttempts: Int) { attemptsRemaining = maxAttempts }

    /// Starts an attempt: the delay (seconds) to wait before it, given a jitter in 0..<1.
    mutating func startAttempt(jitter: Double) -> Double {
        attemptsRemaining -= 1
        let delay = max(0, base + (jitter - 0.5) * base)
        base = min(max(base * Self.factor, Self.initialDelay), Self.maxDelay)
        return delay
    }

    func shouldRetry(after error: NSError, permanentlyFailed: Bool) -> Bool {
        guard attemptsRemaining > 0, !permanentlyFailed, error.domain == FirestoreErrorDomain,
            let code = FirestoreErrorCode(rawValue: error.code)
        else { return false }
        return Self.retryable.contains(code)
    }

    static let retryable: Set<FirestoreErrorCode> = [
        .aborted, .alreadyExists, .failedPrecondition,
        // transient
        .cancelled, .unknown, .deadlineExceeded, .resourceExhausted, .internal, .unavailable, .unauthenticated,
    ]
}

/// What the block returned, carried out of its dispatch queue.
struct TransactionBlockOutcome: @unchecked Sendable {
    let value: Any?
    let error: NSError?
}

extension Firestore {
    /// Runs `updateBlock` and commits its writes atomically, retrying (running the block again)
    /// when something it read changed before the commit. The block's return value is the result;
    /// setting its error pointer fails the transaction with that error.
    public func runTransaction(_ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?) async throws -> Any? {
        try await runTransaction(options: TransactionOptions(), updateBlock)
    }

    public func runTransaction(
        _ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?,
        completion: @escaping @Sendable (Any?, (any Error)?) -> Void
    ) {
        runTransaction(with: nil, block: updateBlock, completion: completion)
    }

    public func runTransaction(
        with options: TransactionOptions?, block updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?,
        completion: @escaping @Sendable (Any?, (any Error)?) -> Void
    ) {
        let options = options ?? TransactionOptions()
        Task {
            do {
                let value = try await runTransaction(options: options, updateBlock)
                completion(value, nil)
            } catch {
                completion(nil, error)
            }
        }
    }

    /// The block runs here, on a concurrent queue rather than in a task, because
    /// `Transaction.getDocument` blocks its thread until the read arrives.
    static let transactionQueue = DispatchQueue(label: "hearth.firestore.transaction", attributes: .concurrent)

    func runTransaction(options: TransactionOptions, _ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?) async throws -> Any? {
        var policy = TransactionRetryPolicy(maxAttempts: options.maxAttempts)
        while true {
            let delay = policy.startAttempt(jitter: Double.random(in: 0..<1))
            if delay > 0 { try await Task.sleep(for: .seconds(delay)) }
            let transaction = Transaction(firestore: self)
            let outcome: TransactionBlockOutcome = await withCheckedContinuation { continuation in
                Self.transactionQueue.async {
                    var error: NSError?
                    let value = withUnsafeMutablePointer(to: &error) { pointer in
                        #if canImport(ObjectiveC)
                        updateBlock(transaction, AutoreleasingUnsafeMutablePointer(pointer))
                        #else
                        updateBlock(transaction, pointer)
                        #endif
                    }
                    continuation.resume(returning: TransactionBlockOutcome(value: value, error: error))
                }
            }
            let failure: NSError
            if let error = outcome.error {
                failure = error
            } else {
                do {
                    try await commit(try transaction.state.withLock { try $0.commitWrites() })
                    return outcome.value
                } catch {
                    failure = error as NSError
                }
            }
            // An error the app's block set in its own domain is final, as in the Apple SDK.
            let permanent = outcome.error.map { $0.domain != FirestoreErrorDomain } ?? false
            guard policy.shouldRetry(after: failure, permanentlyFailed: permanent) else { throw failure }
        }
    }

    /// The documents at `name` as the server has it now (nil: missing).
    func lookup(_ name: String) async throws -> Google_Firestore_V1_Document? {
        var request = Google_Firestore_V1_BatchGetDocumentsRequest()
        request.database = databaseName
        request.documents = [name]
        return try await call { stub, md in
            try await stub.batchGetDocuments(request, metadata: md) { response in
                var document: Google_Firestore_V1_Document?
                for try await message in response.messages {
                    if case .found(let d) = message.result { document = d }
                }
                return document
            }
        }
    }
}
