import java.lang.management.ManagementFactory;

/** Prints the process id as the JDK's APIs give it, and what they say about the process. */
public class Pid {
    public static void main(String[] args) {
        ProcessHandle me = ProcessHandle.current();
        System.out.println("pid " + me.pid());
        System.out.println("jmx " + ManagementFactory.getRuntimeMXBean().getName().split("@")[0]);
        System.out.println("jmx pid " + ManagementFactory.getRuntimeMXBean().getPid());
        System.out.println("alive " + me.isAlive());
        System.out.println("found " + ProcessHandle.of(me.pid()).isPresent());
        System.out.println("command " + me.info().command().isPresent());
    }
}
