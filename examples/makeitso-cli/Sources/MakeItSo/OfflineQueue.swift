import Foundation
import HearthClient

/// The offline modes, for a test that kills the process (tests/conformance/test_client_offline.py):
/// `--offline-queue N` queues N task writes and N counter increments (the server is unreachable),
/// prints `queued N` once they are in the cache and waits to be killed; `--offline-drain 1` opens
/// the same cache, waits until the queue is acknowledged and prints `drained`.
enum OfflineMode {
    case queue(Int)
    case drain
}

func runOffline(_ mode: OfflineMode) async -> Never {
    let db = Firestore.firestore()
    switch mode {
    case .queue(let count):
        for i in 1...count {
            db.collection("queued").document(String(format: "q%03d", i)).setData(["n": i], completion: nil)
            db.document("queued/counter").setData(["hits": FieldValue.increment(Int64(1))], merge: true, completion: nil)
        }
        // setData(_:completion:) has written each batch to the cache file before returning.
        FileHandle.standardOutput.write(Data("queued \(count)\n".utf8))  // unbuffered: the test reads it before killing us
        while true { try? await Task.sleep(for: .seconds(3600)) }
    case .drain:
        do {
            try await db.waitForPendingWrites()
            print("drained")
            exit(0)
        } catch {
            print("drain failed: \(error)")
            exit(1)
        }
    }
}
