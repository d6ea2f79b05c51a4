public import ServiceLifecycle

/// Runs ``LifecycleWorker`` passes in `hearth serve`: whole batches mean more may be waiting,
/// so passes repeat at once until one finds less than a batch; then it waits `intervalSeconds`.
/// A `Service` of the server's `ServiceGroup`; stops on graceful shutdown.
public struct LifecycleService: Service {
    let worker: LifecycleWorker

    public init(worker: LifecycleWorker) { self.worker = worker }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    while !Task.isCancelled, try await worker.pass(dryRun: false).total > 0 {}
                } catch {
                    worker.logger.error("lifecycle pass failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: .seconds(worker.rules.intervalSeconds)) } catch { return }
            }
        }
    }
}
