import Testing

@testable import EventLoop

struct LoopBoundTests {
    @Test func readAndChangedOnTheLoop() {
        let counts = LoopBound([0, 0])
        EventLoop.shared.runAndWait {
            counts.value[1] += 2
            counts.value.append(3)
        }
        #expect(EventLoop.shared.runAndWait { counts.value } == [0, 2, 3])
    }

    @Test func onTheLoopOfItsOwnNotAnother() {
        let other = EventLoop()
        let flag = LoopBound(false, on: other)
        other.runAndWait { flag.value = true }
        #expect(other.runAndWait { flag.value })
    }

    @Test func readOffTheLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let count = LoopBound(1)
            _ = count.value
        }
    }

    @Test func changedOffTheLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let count = LoopBound(1)
            count.value += 1
        }
    }

    @Test func changedOnAnotherLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let count = LoopBound(1)
            EventLoop().runAndWait { count.value += 1 }
        }
    }
}
