public import Foundation
public import Logging
public import NIOSSL
public import ServiceLifecycle
import Synchronization
import UnixSignals

/// The TLS contexts in force, one per protocol offer. A connection takes the current context
/// when it is accepted, so a reload changes what new handshakes present and leaves open
/// connections alone.
public final class TLSContexts: Sendable {
    /// What a port offers by ALPN.
    public enum Offer: Sendable {
        /// `http/1.1` only (auth, storage, S3, database, api, console).
        case http1
        /// `h2` (gRPC) and `http/1.1` (REST): the Firestore port.
        case h2AndHTTP1

        var protocols: [String] { self == .http1 ? ["http/1.1"] : ["h2", "http/1.1"] }
    }

    struct Contexts: Sendable {
        let http1: NIOSSLContext
        let h2AndHTTP1: NIOSSLContext
        let identity: TLSIdentity
    }

    public let files: TLSFiles
    private let current: Mutex<Contexts>

    /// Loads the files; throws what ``TLSIdentity/load(_:now:)`` throws.
    public init(files: TLSFiles) throws(TLSLoadError) {
        self.files = files
        current = Mutex(try Self.make(TLSIdentity.load(files), files))
    }

    static func make(_ identity: TLSIdentity, _ files: TLSFiles) throws(TLSLoadError) -> Contexts {
        do {
            return Contexts(
                http1: try identity.context(alpn: Offer.http1.protocols), h2AndHTTP1: try identity.context(alpn: Offer.h2AndHTTP1.protocols),
                identity: identity)
        } catch {
            throw TLSLoadError(.mismatchedPair, "\(files.certificate) and \(files.key) do not make a TLS context: \(error)")
        }
    }

    /// The context a new connection uses.
    public func context(_ offer: Offer) -> NIOSSLContext {
        current.withLock { offer == .http1 ? $0.http1 : $0.h2AndHTTP1 }
    }

    /// When the certificate in force expires.
    public var notValidAfter: Date { current.withLock { $0.identity.notValidAfter } }
    /// The certificate chain in force (the server certificate first).
    public var chain: [NIOSSLCertificate] { current.withLock { $0.identity.chain } }

    /// Reads the files again; on success the new pair serves every later handshake.
    public func reload() throws(TLSLoadError) {
        let contexts = try Self.make(TLSIdentity.load(files), files)
        current.withLock { $0 = contexts }
    }
}

/// Reloads the certificate and key when either file changes (checked every `interval`) or the
/// process receives SIGHUP. A pair that does not load (half written, mismatched, expired) is
/// logged and the pair in force stays.
public struct TLSReloader: Service {
    let contexts: TLSContexts
    let logger: Logger
    let interval: Duration

    public init(contexts: TLSContexts, logger: Logger, interval: Duration = .seconds(1)) {
        self.contexts = contexts
        self.logger = logger
        self.interval = interval
    }

    struct Stamp: Equatable, Sendable {
        var modified: Date?
        var size: Int?
        var inode: Int?
    }

    func stamps() -> [Stamp?] {
        [contexts.files.certificate, contexts.files.key].map { path in
            guard let a = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
            return Stamp(
                modified: a[.modificationDate] as? Date, size: (a[.size] as? NSNumber)?.intValue,
                inode: (a[.systemFileNumber] as? NSNumber)?.intValue)
        }
    }

    func reload(_ why: String) {
        do {
            try contexts.reload()
            logger.notice("reloaded the TLS certificate", metadata: [
                "why": "\(why)", "certificate": "\(contexts.files.certificate)", "expires": "\(contexts.notValidAfter)",
            ])
        } catch {
            logger.error("TLS certificate not reloaded; the one in force stays", metadata: ["why": "\(why)", "error": "\(error)"])
        }
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in signals { reload("SIGHUP") }
                }
                group.addTask {
                    var seen = stamps()
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: interval) } catch { return }
                        let now = stamps()
                        if now != seen, !now.contains(nil) {
                            seen = now
                            reload("file changed")
                        }
                    }
                }
                _ = await group.next()
                group.cancelAll()
            }
        }
    }
}
