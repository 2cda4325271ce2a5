import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;

/** Prints the JVM's uptime and start time (RuntimeMXBean): clocks outside System's. */
public class Uptime {
    public static void main(String[] a) throws Exception {
        RuntimeMXBean r = ManagementFactory.getRuntimeMXBean();
        Thread.sleep(30);
        System.out.println("uptime=" + r.getUptime() + " start=" + r.getStartTime());
    }
}
