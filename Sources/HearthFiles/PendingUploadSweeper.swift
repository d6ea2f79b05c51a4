public import HearthCore
import Logging
public import ServiceLifecycle

/// Expires uploads that were presigned but never completed: every `interval` it marks
/// `pending` files older than the policy's timeout `failed` and deletes their objects, in
/// bounded batches. A `Service` of the server's `ServiceGroup`; stops on graceful shutdown.
/// Servers sharing a database run it on one of them at a time (`jobs`, job "pending-uploads").
public struct PendingUploadSweeper: Service {
    let registry: FileRegistry
    let interval: Duration
    let batchSize: Int
    let jobs: any JobCoordinator

    /// The job's name for ``JobCoordinator``.
    public static let job = "pending-uploads"

    public init(registry: FileRegistry, interval: Duration, batchSize: Int = 100, jobs: any JobCoordinator = LocalJobCoordinator()) {
        self.registry = registry
        self.interval = interval
        self.batchSize = batchSize
        self.jobs = jobs
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    // Whole batches mean more may be waiting: continue at once.
                    _ = try await jobs.runExclusively(job: Self.job) {
                        while try await registry.expirePending(limit: batchSize) == batchSize, !Task.isCancelled {}
                    }
                } catch {
                    registry.logger.error("expiring unfinished uploads failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }
}
