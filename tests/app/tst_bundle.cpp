// A bundle opened in the workbench leaves no trace (review point 23): Recent stores and the status bar
// name the bundle file, never its temporary folder; the folder goes with the window, and with a
// pkbw-gui ended by SIGTERM. The bundle is written by core's export_bundle from a fixture store.
#include "fixtures.h"
#include "mainwindow.h"
#include "pkbw/core/bundle.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

class TestBundle : public QObject {
    Q_OBJECT
    QString bundle_;

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        const auto [store, id] = test::one_eval_run_store(QStringLiteral("bundle-source"));
        bundle_ = test::temp_path(QStringLiteral("review.pkbw"));
        QFile::remove(bundle_);
        export_bundle(Store::open(store.toStdString()), {id}, bundle_.toStdString());
        QVERIFY(is_bundle(bundle_.toStdString()));
    }

    void recent_stores_and_status_name_the_bundle() {
        QSettings().remove(QStringLiteral("stores/recent"));
        QString folder;
        {
            MainWindow window;
            QSignalSpy opened(&window, &MainWindow::store_opened);
            window.open_store(bundle_); // as Recent stores or File › Open store give it
            QVERIFY(opened.wait(10000));
            folder = window.bundle_folder();
            QVERIFY(!folder.isEmpty() && QFileInfo(folder).isDir());
            QCOMPARE(window.bundle_file(), QFileInfo(bundle_).absoluteFilePath());
            const QStringList recent = QSettings().value(QStringLiteral("stores/recent")).toStringList();
            QCOMPARE(recent.value(0), QFileInfo(bundle_).absoluteFilePath());
            for (const QString& path : recent) {
                QVERIFY2(!path.startsWith(folder), qPrintable(path));
            }
            const QString status = window.statusBar()->currentMessage();
            QVERIFY2(
                status.startsWith(QStringLiteral("Bundle %1").arg(QFileInfo(bundle_).absoluteFilePath())),
                qPrintable(status));
            QVERIFY2(!status.contains(folder), qPrintable(status));
            // The next start opens the bundle again, from its file.
            bool is_default = true;
            QCOMPARE(MainWindow::startup_store(&is_default), QFileInfo(bundle_).absoluteFilePath());
            // Another store: the bundle's folder goes once the new store is open.
            const auto [other, id] = test::one_eval_run_store(QStringLiteral("after-bundle"));
            Q_UNUSED(id);
            window.open_store(other);
            QVERIFY(opened.wait(10000));
            QVERIFY(window.bundle_folder().isEmpty());
            QVERIFY2(!QFileInfo::exists(folder), qPrintable(folder));
            window.open_store(bundle_);
            QVERIFY(opened.wait(10000));
            folder = window.bundle_folder();
            QVERIFY(QFileInfo(folder).isDir());
        }
        QVERIFY2(!QFileInfo::exists(folder), qPrintable(folder)); // gone with the window
    }

    void sigterm_removes_the_unpacked_folder() {
        QProcess gui;
        gui.setProcessChannelMode(QProcess::SeparateChannels);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        gui.setProcessEnvironment(env);
        gui.start(QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw-gui"), {bundle_});
        QVERIFY(gui.waitForStarted(10000));
        QString err;
        QRegularExpression opened(QStringLiteral("opened from (.*)/runs\\.db"));
        QRegularExpressionMatch match;
        QTRY_VERIFY_WITH_TIMEOUT(
            (err += QString::fromUtf8(gui.readAllStandardError()), (match = opened.match(err)).hasMatch()),
            20000);
        const QString folder = match.captured(1);
        QVERIFY2(QFileInfo(folder).isDir(), qPrintable(err));
        gui.terminate(); // SIGTERM
        QVERIFY(gui.waitForFinished(20000));
        QCOMPARE(gui.exitStatus(), QProcess::NormalExit);
        QVERIFY2(!QFileInfo::exists(folder), qPrintable(folder + QStringLiteral(" left behind")));
    }
};

QTEST_MAIN(TestBundle)
#include "tst_bundle.moc"
