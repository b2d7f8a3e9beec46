// The event -> signal bridge with the real engine and the bundled demo model:
// every line arrives as a queued signal on the GUI thread, cancellation stops a
// run at once (also jobs still queued), a policy change mid-run applies at the
// next line, errors arrive as messages, and destroying the worker mid-run joins.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include "ui/bridge/generation_worker.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/generation_settings.h"
#include "ui/viewmodel/run_view_model.h"

using namespace kvs::ui;

namespace {

kvs::GenerationRequest demoRequest(const std::string& policy = "full") {
  GenerationSettings s;
  s.modelDir = QStringLiteral(KVSTUDIO_DEMO_MODEL);
  s.classId = 3;
  s.seed = 11;
  s.policy = QString::fromStdString(policy);
  s.device = QStringLiteral("cpu");
  s.threads = 1;  // OpenMP spin-waits make 2 threads crawl on a loaded 2-core CI machine
  return s.toRequest();
}

}  // namespace

class TestGenerationWorker : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void streamsEveryLineOnTheGuiThread() {
    GenerationWorker worker;
    RunViewModel vm;
    QSignalSpy units(&worker, &GenerationWorker::unitDone);
    QSignalSpy finished(&worker, &GenerationWorker::jobFinished);
    QSignalSpy progress(&worker, &GenerationWorker::tokenProgress);
    bool offThread = false;
    connect(&worker, &GenerationWorker::unitDone, this, [&] { offThread |= QThread::currentThread() != thread(); });
    const kvs::GenerationRequest r = demoRequest();
    const quint64 job = worker.submit(r);
    vm.track(&worker, job, r);
    QVERIFY(finished.wait(60000));
    QVERIFY(!offThread);
    QCOMPARE(units.count(), 16);
    QVERIFY(progress.count() >= 1);
    QVERIFY(progress.count() <= 256);
    QCOMPARE(vm.state(), RunState::Finished);
    QCOMPARE(vm.memory().size(), size_t{16});
    QVERIFY(vm.lastUnit()->retained.has_value());
    QVERIFY(vm.lastUnit()->attention.has_value());
    QVERIFY(!vm.preview().isNull());
    QCOMPARE(vm.result()->images.size(), size_t{1});
    QCOMPARE(vm.memory().back().kv_bytes_logical, vm.memory().back().kv_bytes_full);  // full cache
    QTRY_VERIFY(!worker.busy());
  }

  void cancelStopsAtOnceAndTheSessionStaysUsable() {
    GenerationWorker worker;
    QSignalSpy units(&worker, &GenerationWorker::unitDone);
    QSignalSpy failed(&worker, &GenerationWorker::jobFailed);
    QSignalSpy finished(&worker, &GenerationWorker::jobFinished);
    const quint64 a = worker.submit(demoRequest());
    const quint64 b = worker.submit(demoRequest());  // still queued when cancelled
    QVERIFY(units.wait(60000));
    QElapsedTimer clock;
    clock.start();
    worker.cancelAll();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 2, 5000);
    QVERIFY2(clock.elapsed() < 2000, "cancel took longer than 2 s");
    QSet<quint64> ids{failed[0][0].toULongLong(), failed[1][0].toULongLong()};
    QCOMPARE(ids, (QSet<quint64>{a, b}));
    QVERIFY(failed[0][2].toBool() && failed[1][2].toBool());
    QCOMPARE(finished.count(), 0);
    // Cancelling twice, or with nothing running, is harmless.
    worker.cancelAll();
    worker.cancelAll();
    worker.submit(demoRequest());
    QVERIFY(finished.wait(60000));
  }

  void policyChangeAppliesAtTheNextLine() {
    GenerationWorker worker;
    RunViewModel vm;
    const kvs::GenerationRequest r = demoRequest("full");
    bool requested = false;
    connect(&worker, &GenerationWorker::unitDone, this, [&](quint64, const UnitDonePtr& e) {
      if (e->unit_index == 3 && !requested) {
        requested = true;
        worker.requestPolicyChange(QStringLiteral("linear:rho=1/4"));
      }
    });
    QSignalSpy changed(&worker, &GenerationWorker::policyChanged);
    QSignalSpy finished(&worker, &GenerationWorker::jobFinished);
    const quint64 job = worker.submit(r);
    vm.track(&worker, job, r);
    QVERIFY(finished.wait(60000));
    QCOMPARE(changed.count(), 1);
    const auto ev = changed[0][1].value<kvs::PolicyChangedEvent>();
    QVERIFY(ev.accepted);
    QVERIFY(ev.unit_index >= 3);  // the GUI thread saw line 3 while the worker went on
    QCOMPARE(vm.policyMarkers().size(), 1);
    QCOMPARE(vm.result()->policy, std::string("linear:rho=1/4"));
    QVERIFY(vm.memory().back().kv_bytes_logical < vm.memory().back().kv_bytes_full);

    // An impossible change is refused, and the run goes on with the old policy.
    connect(&worker, &GenerationWorker::jobStarted, this,
            [&] { worker.requestPolicyChange(QStringLiteral("linear:rho=0")); });
    worker.submit(demoRequest("streaming:rho=1/2"));
    QVERIFY(finished.wait(60000));
    QCOMPARE(changed.count(), 2);
    const auto refused = changed[1][1].value<kvs::PolicyChangedEvent>();
    QVERIFY(!refused.accepted);
    QVERIFY(!refused.message.empty());
  }

  void errorsArriveAsMessages() {
    GenerationWorker worker;
    QSignalSpy failed(&worker, &GenerationWorker::jobFailed);
    kvs::GenerationRequest r = demoRequest();
    r.model_path = "/nonexistent/model";
    worker.submit(r);
    QVERIFY(failed.wait(30000));
    QVERIFY(!failed[0][2].toBool());
    QVERIFY2(failed[0][1].toString().contains("/nonexistent/model"), qPrintable(failed[0][1].toString()));
  }

  void destroyingMidRunJoins() {
    auto* worker = new GenerationWorker;
    QSignalSpy units(worker, &GenerationWorker::unitDone);
    worker->submit(demoRequest());
    worker->submit(demoRequest());
    QVERIFY(units.wait(60000));
    QElapsedTimer clock;
    clock.start();
    delete worker;
    QVERIFY2(clock.elapsed() < 2000, "closing mid-run took longer than 2 s");
  }

  // Panes run together stream at the same time, each on a worker of its own
  // that is released when the comparison ends, and give the same images as
  // panes run one after another (same class, seed and sampling).
  void comparePanesStreamTogether() {
    GenerationWorker worker;
    const QStringList specs{QStringLiteral("full"), QStringLiteral("linear:rho=0.25")};
    CompareViewModel together(&worker);
    QSignalSpy togetherDone(&together, &CompareViewModel::finished);
    QVERIFY(together.start(specs, demoRequest(), familyDescription("llamagen"), CompareSchedule::Together).isEmpty());
    QCOMPARE(together.extraWorkerCount(), 1);
    QVERIFY(togetherDone.wait(120000));
    QCOMPARE(together.maxPanesStreamingAtOnce(), 2);
    QCOMPARE(together.extraWorkerCount(), 0);
    QCOMPARE(together.rows().size(), 2);

    CompareViewModel oneByOne(&worker);
    QSignalSpy oneByOneDone(&oneByOne, &CompareViewModel::finished);
    QVERIFY(oneByOne.start(specs, demoRequest(), familyDescription("llamagen"), CompareSchedule::OneAfterAnother)
                .isEmpty());
    QCOMPARE(oneByOne.extraWorkerCount(), 0);
    QVERIFY(oneByOneDone.wait(120000));
    QCOMPARE(oneByOne.maxPanesStreamingAtOnce(), 1);
    for (int i = 0; i < 2; ++i) {
      QCOMPARE(together.pane(i)->result()->tokens, oneByOne.pane(i)->result()->tokens);
      QCOMPARE(together.rows()[i].kvBytesFinal, oneByOne.rows()[i].kvBytesFinal);
    }
    QVERIFY(together.rows()[1].kvBytesFinal < together.rows()[0].kvBytesFinal);
  }

  void cancellingATogetherCompareStopsEveryPane() {
    GenerationWorker worker;
    CompareViewModel vm(&worker);
    QSignalSpy done(&vm, &CompareViewModel::finished);
    QVERIFY(vm.start({QStringLiteral("full"), QStringLiteral("streaming:rho=0.25"), QStringLiteral("linear:rho=0.25")},
                     demoRequest(), familyDescription("llamagen"), CompareSchedule::Together)
                .isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(vm.pane(1)->unitsDone() > 0, 60000);
    QElapsedTimer clock;
    clock.start();
    vm.cancel();
    QVERIFY(done.wait(10000));
    QVERIFY2(clock.elapsed() < 3000, "cancelling the panes took longer than 3 s");
    QVERIFY(!vm.running());
    QCOMPARE(vm.extraWorkerCount(), 0);
    for (int i = 0; i < vm.paneCount(); ++i) QVERIFY(vm.pane(i)->state() != RunState::Running);
  }
};

QTEST_MAIN(TestGenerationWorker)
#include "test_generation_worker.moc"
