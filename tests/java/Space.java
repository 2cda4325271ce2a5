import java.io.File;

/** The file system's space as java.io.File reports it (changes with every byte written). */
public class Space {
    public static void main(String[] args) {
        File f = new File(".");
        System.out.println("usable " + f.getUsableSpace() + " free " + f.getFreeSpace() + " total " + f.getTotalSpace());
    }
}
