import Foundation
import TetherClient
import TetherProtocol
import TetherTUI

/// The frame around every screen: a titled box (dropped on small terminals), a notice line for
/// the outcome of the user's actions, a line of key hints, and the status bar.
///
/// The status bar shows the current state only: connecting, joining (connected, waiting for the
/// room's state), live, reconnecting (with the reason), not joined (the server refused the room),
/// closed. Transient news ("resynced from a snapshot") disappears after `transientDuration`.
///
/// The notice line says what happened to an action that failed: refused by the server ("✗": not
/// applied), or not sent (it waited in the client's queue longer than `--timeout`). It clears on
/// the next action that succeeds, when the connection comes back, or after `noticeDuration`.
/// Presses waiting for the server (queued while disconnected, or sent and unanswered) show on
/// the waiting line: at once while disconnected, after `waitingDelay` while connected, so a
/// normal round trip never flickers it.
@MainActor
final class Shell {
    let root: Stack
    let status = StatusBar()
    let notice = Label("", style: Shell.problemStyle, wraps: true)
    let waiting = Label("", style: Shell.waitingStyle, wraps: true)
    let hintBar = HintBar()
    let screen: any Screen
    let context: ScreenContext
    /// The room's refusal (unknown room, unauthorized...), shown instead of the screen.
    let refusal = Label("", wraps: true)
    var transientDuration: Duration = .seconds(5)
    var noticeDuration: Duration = .seconds(10)
    var waitingDelay: Duration = .milliseconds(500)

    private let client: TetherClient
    private let frame: Box
    private var connection: ConnectionState
    private var transientInfo: String?
    private var transientGeneration = 0
    private var noticeGeneration = 0
    /// True while the notice is about an action that could not be sent for lack of a connection.
    private var noticeIsAboutTheConnection = false
    private var waitingGeneration = 0

    init(client: TetherClient, context: ScreenContext, inspector: Bool = false) {
        self.client = client
        self.context = context
        connection = client.connectionState.value
        screen = Screens.make(for: context, inspector: inspector)
        let room = context.room
        refusal.isHidden = true
        let content = Stack(.vertical, [screen.body, refusal])
        frame = Box(title: "tether · \(room.name)", padding: 1, content)
        frame.borderlessBelow = Size(width: 50, height: 14)
        notice.isHidden = true
        waiting.isHidden = true
        root = Stack(.vertical, [frame, notice, waiting, hintBar, status])
        root.setSize(.fill(), of: frame)
        status.room = room.name
        hintBar.pinned = ["q quit"]

        client.connectionState.bind { [weak self] state in
            guard let self else { return }
            let wasConnected = connection.isConnected
            connection = state
            if case .resynced(let name) = state { showTransient("\(name) resynced from a snapshot") }
            if state.isConnected, !wasConnected, noticeIsAboutTheConnection { clearNotice() }
            updateWaiting()
            updateStatus()
        }.store(in: context.bag)
        let bar = status
        client.lastActionLatency.bind { bar.latency = $0 }.store(in: context.bag)
        room.observeChanges { [weak self, unowned room] _ in
            bar.version = room.version
            self?.updateStatus()
        }.store(in: context.bag)
        client.pendingActions.bind { [weak self] _ in self?.updateWaiting() }.store(in: context.bag)
        room.lastError.observe { [weak self] error in
            guard let self, let error else { return }
            if room.isSynced {
                showNotice("✗ " + Output.describe(error))
            }
            updateStatus()
        }.store(in: context.bag)
        context.hints.bind { [weak self] _ in self?.updateHints() }.store(in: context.bag)
        context.onActionResult = { [weak self] action, result in self?.actionFinished(action, result) }
        context.onProblem = { [weak self] problem in self?.showNotice("✗ " + problem) }
    }

    /// Routes keys, focus and handler errors of `application` through the screen, the hints and
    /// the notice line. The application keeps the shell (and so the screen and its bindings) alive.
    func attach(to application: Application) {
        context.application = application
        application.onKey = { key in self.screen.handleKey(key) }
        application.onError = { [weak self] error in self?.showNotice("✗ " + Output.describe(error)) }
        application.onFocusChange = { [weak self] focused in
            // In a text field q is typed, so only Ctrl-C quits there.
            self?.hintBar.pinned = focused?.capturesText == true ? ["Ctrl-C quit"] : ["q quit"]
            self?.screen.focusDidChange(to: focused)
        }
        if let first = screen.initialFocus { application.focus(first) }
    }

    // MARK: Status

    private func updateStatus() {
        let room = context.room
        if let error = room.lastError.value, !room.isSynced {
            status.connection = .custom("not joined", .red)
            status.message = .error(error.code.rawValue)
            // The server's sentence says what happened and what joining again gives; not said twice.
            refusal.text = error.code == .roomDeleted
                ? "\(Self.sentence(error.message))\n\nTo join it again: tether \(room.name). q quits."
                : "Cannot open the room \"\(room.name)\".\n\n\(error.code.rawValue): \(error.message)\n\n"
                    + "A room is KIND or KIND:INSTANCE. q quits."
            refusal.isHidden = false
            screen.body.isHidden = true
            hintBar.hints = []
            return
        }
        if !refusal.isHidden {
            refusal.isHidden = true
            screen.body.isHidden = false
            updateHints()
        }
        switch connection {
        case .connecting:
            status.connection = .connecting
            status.message = .info("connecting to \(client.options.url)")
        case .live, .resynced:
            if room.isSynced {
                status.connection = .live
                status.message = transientInfo.map { .info($0) }
            } else {
                status.connection = .custom("joining", .yellow)
                status.message = .info("waiting for the room's state")
            }
        case .reconnecting(let attempt, let reason):
            status.connection = .custom("reconnecting (attempt \(attempt))", .magenta)
            status.message = .error(Self.shorten(reason, url: client.options.url))
        case .closed(let reason):
            status.connection = .disconnected
            status.message = .error(reason)
        }
    }

    /// `text` with a capital and a full stop.
    static func sentence(_ text: String) -> String {
        let capitalized = text.prefix(1).uppercased() + text.dropFirst()
        return capitalized.hasSuffix(".") ? capitalized : capitalized + "."
    }

    private func showTransient(_ text: String) {
        transientInfo = text
        transientGeneration += 1
        let generation = transientGeneration
        let duration = transientDuration
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: duration)
            guard let self, self.transientGeneration == generation else { return }
            self.transientInfo = nil
            self.updateStatus()
        }
    }

    /// "cannot connect to URL: connection refused" as "cannot connect: connection refused".
    static func shorten(_ reason: String, url: String) -> String {
        var text = reason
        let bare = url.hasSuffix("/") ? String(url.dropLast()) : url
        for noise in [" to \(url)", " to \(bare)", "\(bare)/: ", "\(url): ", "\(bare): "] {
            text = text.replacingOccurrences(of: noise, with: "")
        }
        return text
    }

    // MARK: Notices

    private func actionFinished(_ action: String, _ result: Result<Int, any Error>) {
        switch result {
        case .success:
            clearNotice()
        case .failure(TetherClientError.notSent(let reason)):
            showNotice("✗ \(action) was not sent (\(reason)); press again once live", aboutTheConnection: true)
        case .failure(TetherClientError.closed):
            break  // the screen is closing
        case .failure(let error as TetherClientError) where error.applied == .unknown:
            showNotice("? \(action): \(Output.describe(error)); the room is shown as it is now")
        case .failure(let error):
            showNotice("✗ \(action): \(Output.describe(error))")
        }
    }

    /// Shows how many presses wait for the server: at once while not connected (they go when the
    /// connection is back), else only once one has waited `waitingDelay`.
    private func updateWaiting() {
        waitingGeneration += 1
        let count = client.pendingActions.value.count
        guard count > 0 else {
            waiting.isHidden = true
            return
        }
        let presses = count == 1 ? "1 press" : "\(count) presses"
        guard connection.isConnected else {
            waiting.text = "\(presses) waiting for the server: sent when the connection is back"
            waiting.isHidden = false
            return
        }
        let generation = waitingGeneration
        let delay = waitingDelay
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: delay)
            guard let self, self.waitingGeneration == generation else { return }
            self.waiting.text = "\(presses) waiting for the server"
            self.waiting.isHidden = false
        }
    }

    static let problemStyle = Style(fg: .red, bold: true)
    static let waitingStyle = Style(fg: .yellow)

    /// Shows `text` on the notice line; it clears after `noticeDuration`.
    private func showNotice(_ text: String, aboutTheConnection: Bool = false) {
        notice.text = text
        notice.isHidden = false
        noticeIsAboutTheConnection = aboutTheConnection
        noticeGeneration += 1
        let generation = noticeGeneration
        let duration = noticeDuration
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: duration)
            guard let self, self.noticeGeneration == generation else { return }
            self.clearNotice()
        }
    }

    private func clearNotice() {
        noticeGeneration += 1
        notice.text = ""
        notice.isHidden = true
        noticeIsAboutTheConnection = false
    }

    // MARK: Hints

    /// The screen's hints, with "Tab focus" when there is more than one thing to focus.
    private func updateHints() {
        // The screen's keys act on nothing while the refusal (a deleted room) stands in for it.
        guard refusal.isHidden else {
            hintBar.hints = []
            return
        }
        var hints = context.hints.value
        if Application.focusableWidgets(in: screen.body).count > 1 { hints.append("Tab focus") }
        hintBar.hints = hints
    }
}
