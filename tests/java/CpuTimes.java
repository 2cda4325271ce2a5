import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** CPU times and memory figures of this process, as monitoring code reports them. */
public class CpuTimes {
    public static void main(String[] args) {
        long s = 0;
        for (int i = 0; i < 5_000_000; i++) {
            s += i;
        }
        ThreadMXBean t = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        System.out.println("thread cpu " + t.getCurrentThreadCpuTime() + " user " + t.getCurrentThreadUserTime());
        System.out.println("process cpu " + os.getProcessCpuTime() + " free " + os.getFreeMemorySize()
            + " virtual " + os.getCommittedVirtualMemorySize() + " " + (s > 0));
        long gcs = 0;
        long gcTime = 0;
        for (java.lang.management.GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs += gc.getCollectionCount();
            gcTime += gc.getCollectionTime();
        }
        System.out.println("gc " + gcs + " " + gcTime + " compiled " + ManagementFactory.getCompilationMXBean().getTotalCompilationTime());
    }
}
