import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM as a callback on the main actor, instead of the default abrupt exit.
enum Signals {
    static func onTermination(_ handler: @escaping @MainActor () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { MainActor.assumeIsolated { handler() } }
            source.resume()
            return source
        }
    }
}
