import HearthDocuments
import ServiceLifecycle

/// Every few seconds moves idle Listen streams' position to now, so a client that
/// reconnects resumes from a recent point (its resume token) and finds the state it missed
/// in the engine's document history.
struct ListenHeartbeat: Service {
    let engine: DocumentEngine
    var interval: Duration = .seconds(10)

    func run() async throws {
        let interval = interval
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                engine.listenHeartbeat()
            }
        }
    }
}
